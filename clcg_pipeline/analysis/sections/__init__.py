"""One module per section of the estimator suite (STUDY.md section 6); ``run_suite`` calls them."""
