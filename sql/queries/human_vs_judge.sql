-- Human-validation overlap: per judge, the individual ratings (kept by the QC funnel) that carry a
-- primary error category beside that judge's collapsed label of the same response, and how often
-- they agree (percent only; kappa with its interval is in human_validation_estimates).
SELECT judge,
       count(*) AS ratings,
       count(DISTINCT task_id) AS responses,
       sum(CASE WHEN primary_error_category = judge_collapsed_label THEN 1 ELSE 0 END) AS agree,
       round(avg(CASE WHEN primary_error_category = judge_collapsed_label THEN 1.0 ELSE 0.0 END), 4) AS percent,
       bool_or(simulated) AS simulated
FROM human_validation_joins
WHERE qc_step = 'kept' AND kind = 'single' AND judge IS NOT NULL AND judge_status = 'ok'
  AND primary_error_category IS NOT NULL
GROUP BY judge
ORDER BY judge;
