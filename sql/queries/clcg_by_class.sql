-- Per-Joshi-class mean of language CLCGs in the primary band (rule A; class null = unresolved).
-- Every language but the reference counts: the baseline (Portuguese, class 4) is a class too,
-- as in the report's per-class table.
WITH band AS (
    SELECT * FROM band_scores
    WHERE context_scope = $context_scope AND item_source = $item_source AND list_contains($levels, level)
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
