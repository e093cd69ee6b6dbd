"""Validation studies around the estimator (STUDY.md section 7).

The automatic error taxonomy (two LLM judges label English/target response pairs with
``clcg-error-v1``) and the human-validation round trip (annotation sample, export for
annotators, import, quality control, agreement): the "human-validation joins" of the graph.
"""
