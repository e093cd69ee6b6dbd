-- Every pair of models (the model_pairs table beside study_results.json, which keeps only the pairs
-- a reader needs): one row per pair and gap (h1_micro, macro, macro_net), the first model minus the
-- second on the items both answered, with the bootstrap interval, p and p adjusted by
-- Benjamini-Hochberg across the pairs of each gap; shown = kept in study_results.json and the report.
SELECT
    model_a,
    model_b,
    gap,
    round(estimate, 4) AS estimate,
    round(ci_low, 4) AS ci_low,
    round(ci_high, 4) AS ci_high,
    round(p, 4) AS p,
    round(p_adj, 4) AS p_adj,
    n_common_items,
    n,
    n_articles,
    identifiable,
    shown
FROM model_pairs
ORDER BY gap, p_adj NULLS LAST, model_a, model_b;
