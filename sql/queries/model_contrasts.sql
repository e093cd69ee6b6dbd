-- Paired model contrasts (first model minus second, on the items both answered; BH across the
-- pairs in p_adj) and each model's rank (1 = smallest gap) with its bootstrap rank interval,
-- from the estimates table: one row per estimand and pair or model. Every pair is here; the
-- report shows only those a reader needs (adjacent ranks, the new model's, significant after BH).
-- model_pairs lists every pair with its two models and the items both answered.
SELECT
    estimand,
    "group",
    CASE WHEN estimand LIKE 'model_contrast_%' THEN 'contrast' ELSE 'rank' END AS kind,
    round(estimate, 4) AS estimate,
    round(ci_low, 4) AS ci_low,
    round(ci_high, 4) AS ci_high,
    round(p, 4) AS p,
    round(p_adj, 4) AS p_adj,
    n,
    n_articles,
    identifiable,
    status
FROM estimates
WHERE estimand LIKE 'model_contrast_%' OR estimand LIKE 'model_rank_%'
ORDER BY kind, estimand, CASE WHEN estimand LIKE 'model_rank_%' THEN estimate END NULLS LAST, "group";
