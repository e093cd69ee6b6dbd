-- Per-language CLCG point estimates in the primary band (rule A): mean_en - mean_l.
-- Descriptive; intervals come from the `estimates` table.
WITH band AS (
    SELECT * FROM band_scores
    WHERE context_scope = $context_scope AND item_source = $item_source AND list_contains($levels, level)
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
