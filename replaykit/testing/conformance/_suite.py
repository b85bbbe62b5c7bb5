"""The suite: every store check in the order `check_store` runs them, and the runner.

The checks live in the modules by area beside this one. They run in the order they
ran in before the suite was split by area, so a store's failures are reported in the
same order as before; the order means nothing else (each check gets a fresh store).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

from replaykit.stores.base import Store
from replaykit.testing.conformance._attributes import (
    check_attributes_refused_alike,
    check_attributes_round_trip,
    check_set_attributes_merges,
)
from replaykit.testing.conformance._cancels import (
    check_cancel_requests_keep_the_first,
    check_parent_close_policies,
)
from replaykit.testing.conformance._events import check_event_latest_wins, check_get_events
from replaykit.testing.conformance._families import check_move_family
from replaykit.testing.conformance._finish_with_record import (
    check_finish_with_an_equal_record_already_there,
    check_finish_with_record_commits_both,
    check_finish_with_record_notifies_once,
    check_finish_with_record_racing_record,
    check_finish_with_record_refused_by_the_log,
    check_finish_with_record_refused_by_the_run,
)
from replaykit.testing.conformance._finishing import (
    check_finish_many_finishes_each,
    check_finish_many_refuses_one_run_twice,
    check_finish_many_with_last_records,
    check_finish_only_from_pending,
)
from replaykit.testing.conformance._forks import (
    check_fork_lineage,
    check_fork_sets_the_events_its_records_set,
    check_fork_with_records,
)
from replaykit.testing.conformance._generations import (
    check_continue_workflow,
    check_continue_workflow_refusals,
    check_continue_workflow_retried_after_a_lost_answer,
    check_create_finds_a_continued_run_by_its_first_inputs,
    check_delete_takes_the_generations,
    check_rewind_keeps_the_attempt,
)
from replaykit.testing.conformance._heartbeats import (
    check_heartbeat_names_are_bounded,
    check_heartbeat_records_what_the_engine_runs,
)
from replaykit.testing.conformance._holds import (
    check_beat_takes_over,
    check_executor_holds,
    check_heartbeat_and_take_over,
)
from replaykit.testing.conformance._lifecycle import (
    check_bump_recovery,
    check_close_is_idempotent,
    check_create_is_idempotent,
    check_create_many_dedup,
    check_create_many_new_rows,
    check_create_many_notifies_once_per_queue,
    check_create_many_round_trips_payloads,
    check_create_many_then_claim,
    check_create_many_with_existing,
    check_create_returns_stored_row,
    check_created_at_kept_when_given,
    check_dedup_id,
    check_delete,
    check_set_status,
    check_started_at_on_create,
)
from replaykit.testing.conformance._listing import (
    check_count_workflows_by,
    check_list_by_wake_instant,
    check_list_filters,
    check_list_order_ties_broken_by_id,
    check_newest_first_and_counts_at_most,
)
from replaykit.testing.conformance._messages import (
    check_consume_is_atomic,
    check_consume_many,
    check_consume_with_record,
    check_fifo_per_topic,
    check_keyed_send_with_record,
    check_message_fields,
    check_oldest_across_topics,
    check_send_key_outlives_its_message,
    check_send_message_idempotency,
    check_send_message_names_its_call,
    check_send_with_record,
)
from replaykit.testing.conformance._names import (
    check_names_refused_alike,
    check_record_many_refuses_bad_names_one_by_one,
)
from replaykit.testing.conformance._notifications import (
    check_notifications,
    check_stream_records_notify,
)
from replaykit.testing.conformance._paging import (
    check_count_workflows,
    check_listing_without_payloads,
    check_load_log_range,
)
from replaykit.testing.conformance._partitions import (
    check_partition_keys_stored_and_listed,
    check_partitioned_claims_limit_each_key,
    check_partitioned_claims_serve_keys_in_turn,
    check_partitioned_claims_weigh_keys,
    check_partitioned_concurrent_claims,
)
from replaykit.testing.conformance._queues import (
    check_claim_limits,
    check_claim_order_and_readiness,
    check_concurrent_claims,
    check_deadlines_round_trip_and_claim_starts_timeouts,
    check_release,
)
from replaykit.testing.conformance._record_many import (
    check_record_many_alongside_record,
    check_record_many_commits_each,
    check_record_many_completed_positions,
    check_record_many_notifications,
    check_record_many_refusals,
    check_record_many_refuses_one_run_twice,
    check_record_many_side_effects,
)
from replaykit.testing.conformance._records import (
    check_completed_position_not_overwritten,
    check_concurrent_writers_adopt,
    check_executor_ownership,
    check_pending_step_written_over_with_more_attempts,
    check_record_and_load_log,
    check_record_gap_refused,
    check_record_into_missing_run,
    check_record_into_non_pending_run,
    check_record_late,
    check_record_pending_then_completed,
    check_record_sets_wake_at,
    check_record_transaction,
)
from replaykit.testing.conformance._schedules import check_schedule_requests, check_schedule_states
from replaykit.testing.conformance._shards import (
    check_shard_key_refusals,
    check_shard_keys_given_and_inherited,
    check_shard_keys_never_change,
)
from replaykit.testing.conformance._step_heartbeats import (
    check_step_heartbeats_are_refused_as_records_are,
    check_step_heartbeats_keep_the_latest_per_step,
    check_step_heartbeats_of_a_generation,
)
from replaykit.testing.conformance._support import _CheckFailed
from replaykit.testing.conformance._values import (
    check_datetimes_round_trip,
    check_error_text_with_nul_is_kept,
    check_inputs_and_results_round_trip,
    check_outcomes_round_trip,
    check_unicode_and_large_payloads,
)
from replaykit.testing.conformance._where import (
    check_count_by_attribute,
    check_where_filters,
)
from replaykit.testing.conformance._with_messages import (
    check_answer_message,
    check_create_and_send,
    check_create_and_send_refused_leaves_nothing,
)

__all__ = ["STORE_CHECKS", "StoreCheck", "check_store"]

StoreCheck = Callable[[Store], None]

STORE_CHECKS: tuple[StoreCheck, ...] = (
    check_send_message_names_its_call,
    check_send_key_outlives_its_message,
    check_executor_holds,
    check_get_events,
    check_create_returns_stored_row,
    check_create_is_idempotent,
    check_created_at_kept_when_given,
    check_started_at_on_create,
    check_dedup_id,
    check_create_many_new_rows,
    check_create_many_round_trips_payloads,
    check_create_many_with_existing,
    check_create_many_dedup,
    check_create_many_notifies_once_per_queue,
    check_create_many_then_claim,
    check_fork_with_records,
    check_fork_sets_the_events_its_records_set,
    check_record_and_load_log,
    check_record_pending_then_completed,
    check_completed_position_not_overwritten,
    check_pending_step_written_over_with_more_attempts,
    check_record_gap_refused,
    check_record_into_missing_run,
    check_record_into_non_pending_run,
    check_executor_ownership,
    check_record_sets_wake_at,
    check_concurrent_writers_adopt,
    check_consume_with_record,
    check_consume_is_atomic,
    check_consume_many,
    check_send_with_record,
    check_send_message_idempotency,
    check_fifo_per_topic,
    check_oldest_across_topics,
    check_message_fields,
    check_create_and_send,
    check_create_and_send_refused_leaves_nothing,
    check_answer_message,
    check_event_latest_wins,
    check_record_many_commits_each,
    check_record_many_refusals,
    check_record_many_completed_positions,
    check_record_many_side_effects,
    check_record_many_refuses_one_run_twice,
    check_record_many_alongside_record,
    check_record_many_notifications,
    check_finish_only_from_pending,
    check_finish_many_finishes_each,
    check_finish_many_with_last_records,
    check_finish_many_refuses_one_run_twice,
    check_finish_with_record_commits_both,
    check_finish_with_record_refused_by_the_run,
    check_finish_with_record_refused_by_the_log,
    check_finish_with_an_equal_record_already_there,
    check_finish_with_record_racing_record,
    check_finish_with_record_notifies_once,
    check_set_status,
    check_bump_recovery,
    check_delete,
    check_continue_workflow,
    check_continue_workflow_retried_after_a_lost_answer,
    check_continue_workflow_refusals,
    check_delete_takes_the_generations,
    check_rewind_keeps_the_attempt,
    check_claim_order_and_readiness,
    check_deadlines_round_trip_and_claim_starts_timeouts,
    check_claim_limits,
    check_concurrent_claims,
    check_partition_keys_stored_and_listed,
    check_partitioned_claims_serve_keys_in_turn,
    check_partitioned_claims_limit_each_key,
    check_partitioned_claims_weigh_keys,
    check_partitioned_concurrent_claims,
    check_heartbeat_and_take_over,
    check_beat_takes_over,
    check_release,
    check_list_filters,
    check_list_by_wake_instant,
    check_count_workflows_by,
    check_newest_first_and_counts_at_most,
    check_list_order_ties_broken_by_id,
    check_datetimes_round_trip,
    check_outcomes_round_trip,
    check_inputs_and_results_round_trip,
    check_unicode_and_large_payloads,
    check_record_transaction,
    check_notifications,
    check_stream_records_notify,
    check_close_is_idempotent,
    check_names_refused_alike,
    check_record_many_refuses_bad_names_one_by_one,
    check_record_late,
    check_error_text_with_nul_is_kept,
    check_fork_lineage,
    check_shard_keys_given_and_inherited,
    check_shard_keys_never_change,
    check_shard_key_refusals,
    check_schedule_states,
    check_schedule_requests,
    check_keyed_send_with_record,
    check_create_finds_a_continued_run_by_its_first_inputs,
    check_move_family,
    check_count_workflows,
    check_listing_without_payloads,
    check_load_log_range,
    check_heartbeat_records_what_the_engine_runs,
    check_heartbeat_names_are_bounded,
    check_step_heartbeats_keep_the_latest_per_step,
    check_step_heartbeats_are_refused_as_records_are,
    check_step_heartbeats_of_a_generation,
    check_cancel_requests_keep_the_first,
    check_parent_close_policies,
    check_attributes_round_trip,
    check_set_attributes_merges,
    check_attributes_refused_alike,
    check_where_filters,
    check_count_by_attribute,
)


def _name(check: StoreCheck) -> str:
    return check.__name__.removeprefix("check_")


def check_store(
    make_store: Callable[[], Store], *, only: Callable[[str], bool] | None = None
) -> None:
    """Run every check in `STORE_CHECKS`, each on a fresh store from `make_store()`.

    Raises one `AssertionError` naming every failed check, with what it
    expected and what it got. `only` selects checks by name (for example
    `only=lambda name: name == "delete"` while working on one guarantee).
    """
    failures: list[str] = []
    first: BaseException | None = None
    ran = 0
    described = "the store"
    for check in STORE_CHECKS:
        name = _name(check)
        if only is not None and not only(name):
            continue
        ran += 1
        store = make_store()
        described = repr(store)
        try:
            check(store)
        except _CheckFailed as exc:
            failures.append(f"[{name}] {exc}")
            first = first or exc
        except Exception as exc:
            where = "".join(traceback.format_exception(exc)[-3:]).rstrip()
            failures.append(f"[{name}] raised {type(exc).__name__}: {exc}\n{where}")
            first = first or exc
        finally:
            store.close()
    if failures:
        raise AssertionError(
            f"check_store: {len(failures)} of {ran} checks failed for {described}:\n\n"
            + "\n\n".join(failures)
        ) from first
