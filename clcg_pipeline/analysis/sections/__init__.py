"""One module per section of the estimator suite (docs/ESTIMANDS.md); ``run_suite`` calls them."""
