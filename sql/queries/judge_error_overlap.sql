-- Judge error overlap (issue 36): per family and pair of judges, the correlation of their errors
-- against the human consensus on the rated responses, and the effective number of independent
-- judges, pooled and per language and script; rule_based_judges marks the offline stand-ins.
SELECT split_part("group", '|', 1) AS family,
       CASE estimand WHEN 'judge_error_correlation' THEN 'error_correlation' ELSE 'effective_judges' END AS measure,
       split_part("group", '|', 2) AS judges,
       split_part("group", '|', 3) AS breakdown,
       round(estimate, 4) AS estimate,
       round(ci_low, 4) AS ci_low,
       round(ci_high, 4) AS ci_high,
       n AS responses,
       n_clusters AS articles,
       status,
       coalesce(flags LIKE '%rule-based offline judges%', false) AS rule_based_judges,
       flags
FROM human_validation_estimates
WHERE estimand IN ('judge_error_correlation', 'judge_effective_number')
ORDER BY family, measure DESC, judges,
         CASE WHEN breakdown = 'all' THEN 0 WHEN breakdown LIKE 'language=%' THEN 1 ELSE 2 END, breakdown;
