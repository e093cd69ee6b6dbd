-- What was paid, by model, step (responses, granularity tasks, judges, writers, item
-- generation) and outcome, over every calls table and the call cache's payments no table records yet
-- (step 'not yet recorded in a partition'; the call_spend view) and the calls a killed run sent and
-- never cached (outcome 'lost_at_kill', cost estimated): calls, how many were
-- found in the call cache, how many were paid for, tokens, and the paid total (a partition run
-- again keeps the record of the calls it paid for, so this does not drop).
SELECT model, step, outcome, count(*) AS calls,
       sum(CASE WHEN cached THEN 1 ELSE 0 END) AS cached,
       sum(CASE WHEN paid THEN 1 ELSE 0 END) AS paid_calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       round(sum(paid_usd), 4) AS paid_usd
FROM call_spend
GROUP BY model, step, outcome
ORDER BY model, step, outcome;
