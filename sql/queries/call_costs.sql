-- Provider calls and their cost per model and outcome.
SELECT model, outcome, count(*) AS calls, sum(CASE WHEN cached THEN 1 ELSE 0 END) AS cached,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, round(sum(cost_usd), 4) AS cost_usd
FROM calls
GROUP BY model, outcome
ORDER BY model, outcome;
