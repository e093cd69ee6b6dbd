-- needs: scores, languages
-- Scored rows with their language's metadata and the rule-A score (non-ok rows score 0).
CREATE OR REPLACE VIEW band_scores AS
SELECT
    s.*,
    l.name AS language_name,
    l.role,
    l.joshi_class,
    CASE WHEN s.status = 'ok' THEN s.token_f1 ELSE 0.0 END AS score_rule_a
FROM scores AS s
JOIN languages AS l ON l.iso = s.language;
