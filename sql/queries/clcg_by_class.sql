-- Per-Joshi-class mean of language CLCGs in the primary band (rule A; class null = unresolved).
-- Every language but the reference counts: the baseline (Portuguese, class 4) is a class too,
-- as in the report's per-class table.
-- The band is read from the variables context_scope, item_source and levels: clcg query sets them
-- from study.yaml's band; unset (a plain DuckDB client), the default band full_body, llm,
-- [L3, L4, L5]; for another band, first e.g. SET VARIABLE levels = ['L4'] (DuckDB 1.1 or later).
WITH band AS (
    SELECT * FROM band_scores
    WHERE context_scope = coalesce(getvariable('context_scope'), 'full_body')
      AND item_source = coalesce(getvariable('item_source'), 'llm')
      AND list_contains(coalesce(getvariable('levels'), ['L3', 'L4', 'L5']), level)
),
english AS (SELECT avg(score_rule_a) AS mean_en FROM band WHERE role = 'reference'),
per_language AS (
    SELECT b.language, any_value(b.joshi_class) AS joshi_class, any_value(english.mean_en) - avg(b.score_rule_a) AS clcg
    FROM band AS b CROSS JOIN english
    WHERE b.role <> 'reference'
    GROUP BY b.language
)
SELECT joshi_class, count(*) AS n_languages, round(avg(clcg), 4) AS mean_clcg, string_agg(language, ', ' ORDER BY language) AS languages
FROM per_language
GROUP BY joshi_class
ORDER BY joshi_class NULLS LAST;
