-- needs: call_records
-- One row per provider call of the calls tables (calls, task_calls, task_judge_calls,
-- judge_calls, keypoint_calls, task_writer_calls, item_calls, level_audit_calls:
-- storage/_paid.py's CALL_TABLE_STEPS): its model, step, partition, the run (a Dagster run, or
-- the stream that sent it ahead) and host that paid for it, and what it paid. The only
-- definition of a paid call: clcg run's closing line and budget, clcg plan's spend so far and
-- the call_costs query all read this view (clcg_pipeline/storage/_paid.py). A call is paid when
-- it was not found in the call cache and was made: not skipped for the budget, not still waiting
-- in a batch, not failed on every attempt (storage/_paid.py's UNPAID_OUTCOMES). A partition run
-- again keeps the record of the calls it paid for (cached stays false, with the first run); a
-- call answered from a payment no table recorded (its run was killed) is recorded paid, by that
-- run and host. One payment is one call id paid by one run: rows recording the same payment (two
-- tables, or a list that asked twice) count once. call_records also holds the call cache's
-- payments that no calls table recorded yet (calls_table 'call cache', step 'not yet recorded in
-- a partition': a stream or run killed after paying, whose partition never ran again); one
-- counts only while no calls table records its call as paid, since a table that does says what
-- was paid. An unpartitioned calls table (judge_calls, keypoint_calls, the writers') recomputed
-- on a redrawn sample keeps the paid rows of the calls it no longer makes
-- (storage/_io_manager.py), so a model added to the study leaves nothing here; a partition's
-- calls table asking fewer calls keeps those it paid for beside it (left_out_payments.parq,
-- read into call_records under the table's name: storage/_paid.py's LEFT_OUT_FILE).
-- call_records also holds the calls a killed process sent and never cached an answer for
-- (calls_table 'killed run', outcome 'lost_at_kill', from the intent logs:
-- storage/_intents.py): billed by the provider, each one its own payment (never merged with
-- another row of its call id: the rerun that sent it again paid again), at an estimated cost.
CREATE OR REPLACE VIEW call_spend AS
WITH made AS (
    SELECT
        *,
        NOT coalesce(cached, false) AND coalesce(outcome, '') NOT IN ('skipped_budget', 'batch_pending', 'error')
            AS made_and_paid
    FROM call_records
),
claims AS (
    SELECT
        * EXCLUDE (made_and_paid),
        made_and_paid AND NOT (
            calls_table = 'call cache'
            AND coalesce(
                bool_or(made_and_paid AND calls_table NOT IN ('call cache', 'killed run')) OVER (PARTITION BY call_id),
                false
            )
        ) AS claims_payment
    FROM made
),
numbered AS (
    SELECT
        *,
        CASE
            WHEN claims_payment AND paid_run IS NOT NULL AND calls_table <> 'killed run'
                THEN row_number() OVER (
                    PARTITION BY claims_payment, call_id, paid_run
                    ORDER BY paid_at, calls_table, partition
                )
            ELSE 1
        END AS nth_record
    FROM claims
)
SELECT
    model,
    step,
    calls_table,
    partition,
    language,
    paid_run AS run,
    paid_host AS host,
    paid_at,
    call_id,
    outcome,
    error,
    coalesce(cached, false) AS cached,
    claims_payment AND nth_record = 1 AS paid,
    input_tokens,
    output_tokens,
    CASE WHEN claims_payment AND nth_record = 1 THEN coalesce(cost_usd, 0.0) ELSE 0.0 END AS paid_usd
FROM numbered;
