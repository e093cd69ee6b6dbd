-- needs: call_records
-- One row per provider call of the five calls tables (calls, task_calls, task_judge_calls,
-- judge_calls, keypoint_calls): its model, step, partition, the Dagster run that paid for it,
-- and what it paid. The only definition of a paid call: clcg run's closing line and budget,
-- clcg plan's spend so far and the call_costs query all read this view
-- (clcg_pipeline/storage/_paid.py). A call is paid when it was not found in the call cache
-- and was made: not skipped for the budget, not still waiting in a batch. A partition run
-- again keeps the record of the calls it paid for (cached stays false, with the first run).
CREATE OR REPLACE VIEW call_spend AS
SELECT
    model,
    step,
    calls_table,
    partition,
    language,
    paid_run AS run,
    paid_at,
    call_id,
    outcome,
    error,
    coalesce(cached, false) AS cached,
    NOT coalesce(cached, false) AND coalesce(outcome, '') NOT IN ('skipped_budget', 'batch_pending') AS paid,
    input_tokens,
    output_tokens,
    CASE
        WHEN NOT coalesce(cached, false) AND coalesce(outcome, '') NOT IN ('skipped_budget', 'batch_pending')
            THEN coalesce(cost_usd, 0.0)
        ELSE 0.0
    END AS paid_usd
FROM call_records;
