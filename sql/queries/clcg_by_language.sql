-- Per-language CLCG point estimates in the primary band (rule A): mean_en - mean_l.
-- Descriptive; intervals come from the `estimates` table.
-- The band is read from the variables context_scope, item_source and levels: clcg query sets them
-- from study.yaml's band; unset (a plain DuckDB client), the default band full_body, llm,
-- [L3, L4, L5]; for another band, first e.g. SET VARIABLE levels = ['L4'] (DuckDB 1.1 or later).
WITH band AS (
    SELECT * FROM band_scores
    WHERE context_scope = coalesce(getvariable('context_scope'), 'full_body')
      AND item_source = coalesce(getvariable('item_source'), 'llm')
      AND list_contains(coalesce(getvariable('levels'), ['L3', 'L4', 'L5']), level)
),
english AS (SELECT avg(score_rule_a) AS mean_en FROM band WHERE role = 'reference')
SELECT
    b.language,
    any_value(b.language_name) AS name,
    any_value(b.role) AS role,
    any_value(b.joshi_class) AS joshi_class,
    count(*) AS n,
    round(avg(b.score_rule_a), 4) AS mean_score,
    round(any_value(english.mean_en) - avg(b.score_rule_a), 4) AS clcg
FROM band AS b CROSS JOIN english
GROUP BY b.language
ORDER BY clcg DESC NULLS LAST;
