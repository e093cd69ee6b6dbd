-- Provider calls per model and outcome: how many, how many found in the call cache, tokens,
-- and what was paid (calls a partition paid for keep that record when it runs again).
SELECT model, outcome, count(*) AS calls, sum(CASE WHEN cached THEN 1 ELSE 0 END) AS cached,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       round(sum(CASE WHEN cached THEN 0 ELSE cost_usd END), 4) AS paid_usd
FROM calls
GROUP BY model, outcome
ORDER BY model, outcome;
