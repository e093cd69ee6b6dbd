-- Per-model H1 micro point estimate in the primary band (rule A): English mean - pooled target mean.
-- The band is read from the variables context_scope, item_source and levels: clcg query sets them
-- from study.yaml's band; unset (a plain DuckDB client), the default band full_body, llm,
-- [L3, L4, L5]; for another band, first e.g. SET VARIABLE levels = ['L4'] (DuckDB 1.1 or later).
WITH band AS (
    SELECT * FROM band_scores
    WHERE context_scope = coalesce(getvariable('context_scope'), 'full_body')
      AND item_source = coalesce(getvariable('item_source'), 'llm')
      AND list_contains(coalesce(getvariable('levels'), ['L3', 'L4', 'L5']), level)
)
SELECT
    model,
    count(*) FILTER (WHERE role = 'reference') AS n_english,
    count(*) FILTER (WHERE role = 'target') AS n_target,
    round(avg(score_rule_a) FILTER (WHERE role = 'reference'), 4) AS mean_en,
    round(avg(score_rule_a) FILTER (WHERE role = 'baseline'), 4) AS mean_pt,
    round(avg(score_rule_a) FILTER (WHERE role = 'target'), 4) AS mean_target,
    round(avg(score_rule_a) FILTER (WHERE role = 'reference') - avg(score_rule_a) FILTER (WHERE role = 'target'), 4)
        AS h1_micro
FROM band
GROUP BY model
ORDER BY h1_micro DESC NULLS LAST;
