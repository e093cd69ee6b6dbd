-- Per-model H1 micro point estimate in the primary band (rule A): English mean - pooled target mean.
WITH band AS (
    SELECT * FROM band_scores
    WHERE context_scope = $context_scope AND item_source = $item_source AND list_contains($levels, level)
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
