"""Invalid scenarios: exit 2, one line naming the field path and YAML line, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simulator.cli import main
from simulator.scenario import yaml_source
from tests.helpers import fed_a_stream_that_never_ends

# A frozen copy of an earlier launch.yaml: the cases edit its text.
LAUNCH = (Path(__file__).parent / "data" / "corpus_launch.yaml").read_text()


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in scenario")


CLOUD = "{type: on_demand, usd_per_gpu_hour: 2.99}"
BEFORE_CHANGES = "      changes:\n"
CAPACITY = "    capacity_rps: 5.0            # per replica within TTFT p90 < 2 s, TPOT p99 < 100 ms\n"
SECOND_MODEL = "  - {name: chat-70b, pools: [h100-cloud], capacity_rps: 1, demand: {base_rps: 1}}\n\n"
JOB = "{name: finetune-v2, pool: h100-owned, gpus: 64, duration: 10d, submit: 2026-04-01,"
RATE = "rate_per_month: 0.15}"


# (case id, edit of launch.yaml as (old, new), expected field path, text on the expected line,
#  words the message must contain)
CASES = [
    ("typo top level", ("paths: 20", "pathz: 20"), "pathz", "pathz", "did you mean 'paths'"),
    ("typo horizon", ("  step: 1h", "  stepp: 1h"), "horizon.stepp", "stepp", "did you mean 'step'"),
    ("typo fleet", ("fleet:\n  pools:", "fleet:\n  pool:"), "fleet.pool", "  pool:", "did you mean 'pools'"),
    ("typo pool", ("      count: 256", "      cout: 256"), "fleet.pools[0].cout", "cout", "did you mean 'count'"),
    ("typo acquisition", ("price_usd: 33000", "prices_usd: 33000"), "fleet.pools[0].acquisition.prices_usd", "prices_usd", "price_usd"),
    ("typo change", ("{at: 2026-09-01, add: 128}", "{at: 2026-09-01, ad: 128}"), "fleet.pools[0].changes[0].ad", "ad: 128", "did you mean 'add'"),
    ("typo model", ("capacity_rps: 5.0", "capacity: 6.0"), "models[0].capacity", "capacity: 6.0", "capacity_rps"),
    ("typo demand", ("base_rps: 80", "base_rate: 80"), "models[0].demand.base_rate", "base_rate", "base_rps"),
    ("typo growth", ("rate_per_month: 0.15", "rate_per_mnth: 0.15"), "models[0].demand.growth.rate_per_mnth", "rate_per_mnth", "rate_per_month"),
    ("typo seasonality", ("daily_amplitude: 0.35", "daily_amp: 0.35"), "models[0].demand.seasonality.daily_amp", "daily_amp", "daily_amplitude"),
    ("typo pricing", ("input_usd_per_1m: 0.90", "input_per_1m: 2.00"), "pricing.input_per_1m", "input_per_1m", "input_usd_per_1m"),
    ("typo energy", ("pue: 1.3", "peu: 1.3"), "energy.peu", "peu", "pue"),
    ("typo facility", ("usd_per_kw_month: 184", "usd_kw_month: 184"), "facility.usd_kw_month", "usd_kw_month", "usd_per_kw_month"),
    ("typo gpu override", ("fleet:\n", "gpus:\n  H100: {tdp: 700}\nfleet:\n"), "gpus.H100.tdp", "tdp: 700", "tdp_w"),
    ("wrong type", ("count: 256", "count: lots"), "fleet.pools[0].count", "count: lots", "valid integer"),
    ("negative count", ("count: 64", "count: -8"), "fleet.pools[1].count", "count: -8", "greater than or equal to 0"),
    ("unknown gpu", ("gpu: H100\n      acquisition: {type: on_demand", "gpu: H1000\n      acquisition: {type: on_demand"), "fleet.pools[1].gpu", "H1000", "known: A100-80GB, B200, B300"),
    ("end before start", ("duration: 18mo", "end: 2025-01-01"), "horizon", "horizon:", "not after start"),
    ("malformed duration", ("step: 1h", "step: 1 fortnight"), "horizon.step", "fortnight", "expected a duration"),
    ("uneven steps", ("step: 1h", "step: 7h"), "horizon", "horizon:", "whole number"),
    ("unknown pool", ("pools: [h100-owned, h100-cloud]", "pools: [h100-owned, h100-clod]"), "models[0].pools[1]", "h100-clod", "unknown pool"),
    ("unknown growth kind", ("kind: exponential", "kind: exponentail"), "models[0].demand.growth", "exponentail", "expected tags"),
    ("remove too many", ("{at: 2026-09-01, add: 128}", "{at: 2026-09-01, remove: 1000}"), "fleet.pools[0].changes[0].remove", "remove: 1000", "only 256"),
    ("change before start", ("{at: 2026-09-01, add: 128}", "{at: 2025-09-01, add: 128}"), "fleet.pools[0].changes[0].at", "2025-09-01", "before the start"),
    ("zero capacity", ("capacity_rps: 5.0", "capacity_rps: 0"), "models[0].capacity_rps", "capacity_rps: 0", "greater than 0"),
    ("amplitude above one", ("daily_amplitude: 0.35", "daily_amplitude: 1.5"), "models[0].demand.seasonality.daily_amplitude", "daily_amplitude", "less than or equal to 1"),
    ("pue below one", ("pue: 1.3", "pue: 0.9"), "energy.pue", "pue: 0.9", "greater than or equal to 1"),
    ("missing name", ("name: launch\n", ""), "name", "", "required"),
    # horizon and run settings
    ("horizon duration and end both given", ("  duration: 18mo\n", "  duration: 18mo\n  end: 2027-09-01\n"), "horizon", "horizon:", "exactly one of 'duration' and 'end'"),
    ("horizon duration zero", ("duration: 18mo", "duration: 0d"), "horizon", "horizon:", "duration must be positive"),
    ("horizon step zero", ("step: 1h", "step: 0h"), "horizon", "horizon:", "step must be positive"),
    ("horizon too many steps", ("step: 1h", "step: 1ms"), "horizon", "horizon:", "use a coarser step"),
    ("duration negative", ("step: 1h", "step: -1h"), "horizon.step", "step: -1h", "cannot be negative"),
    ("start not an iso date", ("start: 2026-03-01", "start: next tuesday"), "horizon.start", "next tuesday", "expected an ISO date"),
    ("seed negative", ("seed: 7", "seed: -1"), "seed", "seed: -1", "greater than or equal to 0"),
    ("seed beyond 63 bits", ("seed: 7", "seed: 9223372036854775808"), "seed", "seed: 9223", "less than 9223372036854775808"),
    ("paths zero", ("paths: 20", "paths: 0"), "paths", "paths: 0", "greater than or equal to 1"),
    ("paths uncertain", ("paths: 20", "paths: {dist: uniform, low: 10, high: 30}"), "paths", "paths: {dist", "cannot be uncertain"),
    ("name empty", ("name: launch", "name: ''"), "name", "name: ''", "at least 1 character"),
    ("name too long", ("name: launch", "name: " + "x" * 121), "name", "name: xxx", "at most 120 characters"),
    ("description not text", ("description: Chat launch on owned H100s plus on-demand cloud, 18 months hourly", "description: [a, b]"), "description", "description: [", "valid string"),
    ("yaml syntax error", ("  step: 1h", "\tstep: 1h"), "scenario", "\tstep", "not valid YAML"),
    # GPU types
    ("custom gpu missing a figure", ("fleet:\n", "gpus:\n  MyChip: {tflops_bf16: 500, memory_gb: 96, memory_tbps: 3.0, price_usd: 20000, cloud_usd_per_gpu_hour: 2.0}\nfleet:\n"), "gpus.MyChip.tdp_w", "MyChip", "required"),
    ("gpu figure not positive", ("fleet:\n", "gpus:\n  H100: {tdp_w: -700}\nfleet:\n"), "gpus.H100.tdp_w", "tdp_w: -700", "greater than 0"),
    ("gpu entry not a mapping", ("fleet:\n", "gpus:\n  H100: 5\nfleet:\n"), "gpus.H100", "H100: 5", "valid dictionary"),
    # pools and acquisition
    ("duplicate pool name", ("    - name: h100-cloud", "    - name: h100-owned  # again"), "fleet.pools[1].name", "# again", "duplicate pool name"),
    ("pool name empty", ("    - name: h100-cloud", "    - name: ''"), "fleet.pools[1].name", "name: ''", "at least 1 character"),
    ("pool count above limit", ("count: 64", "count: 20000000"), "fleet.pools[1].count", "count: 20000000", "less than or equal to 10000000"),
    ("unknown acquisition type", (CLOUD, "{type: leased, usd_per_gpu_hour: 2.99}"), "fleet.pools[1].acquisition", "type: leased", "expected tags"),
    ("depreciation zero", ("depreciation_years: 5}", "depreciation_years: 0}"), "fleet.pools[0].acquisition.depreciation_years", "depreciation_years: 0", "greater than 0"),
    ("depreciation above 30 years", ("depreciation_years: 5}", "depreciation_years: 50}"), "fleet.pools[0].acquisition.depreciation_years", "depreciation_years: 50", "less than or equal to 30"),
    ("rental price negative", ("usd_per_gpu_hour: 2.99", "usd_per_gpu_hour: -2.99"), "fleet.pools[1].acquisition.usd_per_gpu_hour", "-2.99", "greater than or equal to 0"),
    ("price not finite", ("usd_per_gpu_hour: 2.99", "usd_per_gpu_hour: .nan"), "fleet.pools[1].acquisition.usd_per_gpu_hour", ".nan", "finite number"),
    ("max_count below count", (CLOUD, "{type: on_demand, usd_per_gpu_hour: 2.99, max_count: 32}"), "fleet.pools[1].acquisition.max_count", "max_count: 32", "below the pool's count"),
    ("autoscale without max_count", (CLOUD, "{type: on_demand, usd_per_gpu_hour: 2.99, autoscale: {target_utilization: 0.7}}"), "fleet.pools[1].acquisition.max_count", "autoscale:", "required with autoscale"),
    ("autoscale target zero", (CLOUD, "{type: on_demand, max_count: 128, autoscale: {target_utilization: 0}}"), "fleet.pools[1].acquisition.autoscale.target_utilization", "autoscale:", "greater than 0"),
    ("autoscale interval not positive", (CLOUD, "{type: on_demand, max_count: 128, autoscale: {interval: 0h}}"), "fleet.pools[1].acquisition.autoscale.interval", "autoscale:", "positive duration"),
    ("reserved start before horizon", (CLOUD, "{type: reserved, usd_per_gpu_hour: 2.10, term: 1y, start: 2026-01-01}"), "fleet.pools[1].acquisition.start", "term: 1y", "before the start of the horizon"),
    ("reserved needs a price", (CLOUD, "{type: reserved, term: 1y}"), "fleet.pools[1].acquisition.usd_per_gpu_hour", "type: reserved", "required"),
    ("spot preemption rate above 10", (CLOUD, "{type: spot, usd_per_gpu_hour: 1.2, preemption_rate_per_gpu_hour: 11}"), "fleet.pools[1].acquisition.preemption_rate_per_gpu_hour", "type: spot", "less than or equal to 10"),
    ("orders on a rented pool", ("      count: 64\n", "      count: 64\n      orders: [{at: 2026-05-01, count: 8}]\n"), "fleet.pools[1].orders", "orders:", "apply to owned pools"),
    ("order before start", (BEFORE_CHANGES, "      orders: [{at: 2026-01-01, count: 8}]\n" + BEFORE_CHANGES), "fleet.pools[0].orders[0].at", "orders:", "before the start"),
    ("in service after the start", ("depreciation_years: 5}", "depreciation_years: 5, in_service_since: 2026-04-01}"), "fleet.pools[0].acquisition.in_service_since", "in_service_since", "after the start of the horizon"),
    ("book value above price times count", ("depreciation_years: 5}", "depreciation_years: 5, book_value_usd: 9000000}"), "fleet.pools[0].acquisition.book_value_usd", "book_value_usd", "above price × count"),
    ("book value negative", ("depreciation_years: 5}", "depreciation_years: 5, book_value_usd: -1}"), "fleet.pools[0].acquisition.book_value_usd", "book_value_usd", "greater than or equal to 0"),
    ("order arrives before start", (BEFORE_CHANGES, "      orders: [{at: 2025-12-01, count: 8, lead_time: 30d}]\n" + BEFORE_CHANGES), "fleet.pools[0].orders[0].at", "orders:", "arrives before the start"),
    ("order count zero", (BEFORE_CHANGES, "      orders: [{at: 2026-05-01, count: 0}]\n" + BEFORE_CHANGES), "fleet.pools[0].orders[0].count", "orders:", "greater than or equal to 1"),
    ("procurement threshold above 2", (BEFORE_CHANGES, "      procurement: {threshold: 3, order_count: 8}\n" + BEFORE_CHANGES), "fleet.pools[0].procurement.threshold", "procurement:", "less than or equal to 2"),
    ("change both add and remove", ("{at: 2026-09-01, add: 128}", "{at: 2026-09-01, add: 128, remove: 8}"), "fleet.pools[0].changes[0]", "remove: 8", "exactly one of 'add', 'remove', 'out_of_service' and 'back_in_service'"),
    ("change add zero", ("{at: 2026-09-01, add: 128}", "{at: 2026-09-01, add: 0}"), "fleet.pools[0].changes[0].add", "add: 0", "greater than or equal to 1"),
    ("change date unreadable", ("{at: 2026-09-01, add: 128}", "{at: next spring, add: 128}"), "fleet.pools[0].changes[0].at", "next spring", "expected a date"),
    ("failures blast radius zero", (BEFORE_CHANGES, "      failures: {blast_radius: 0}\n" + BEFORE_CHANGES), "fleet.pools[0].failures.blast_radius", "failures:", "greater than or equal to 1"),
    ("failure rate above one", (BEFORE_CHANGES, "      failures: {rate_per_gpu_hour: 2}\n" + BEFORE_CHANGES), "fleet.pools[0].failures.rate_per_gpu_hour", "failures:", "less than or equal to 1"),
    ("event lognormal p90 below median", (BEFORE_CHANGES, "      failures: {repair: {dist: lognormal, median: 24h, p90: 12h}}\n" + BEFORE_CHANGES), "fleet.pools[0].failures.repair", "failures:", "0 < median < p90"),
    ("event exponential mean zero", (BEFORE_CHANGES, "      failures: {repair: {dist: exponential, mean: 0h}}\n" + BEFORE_CHANGES), "fleet.pools[0].failures.repair.mean", "failures:", "positive duration"),
    ("event unknown distribution", (BEFORE_CHANGES, "      failures: {repair: {dist: gamma, mean: 4h}}\n" + BEFORE_CHANGES), "fleet.pools[0].failures.repair", "failures:", "expected tags"),
    ("event uniform high below low", (BEFORE_CHANGES, "      orders: [{at: 2026-05-01, count: 8, slip: {dist: uniform, low: 8w, high: 2w}}]\n" + BEFORE_CHANGES), "fleet.pools[0].orders[0].slip", "orders:", "'high' must be >= 'low'"),
    ("unknown training sharing mode", ("training: {mode: preempt}", "training: {mode: share}"), "fleet.pools[0].training.mode", "mode: share", "'leftover', 'preempt' or 'dedicated'"),
    ("partition larger than pool", ("training: {mode: preempt}", "training: {mode: dedicated, partition_gpus: 1000}"), "fleet.pools[0].training.partition_gpus", "partition_gpus", "larger than the pool ever is"),
    ("job larger than dedicated partition", ("training: {mode: preempt}", "training: {mode: dedicated, partition_gpus: 32}"), "training.jobs[0].gpus", "finetune-v2", "never has more than 32"),
    ("power cap below initial fleet", ("facility:", "power: {caps: [{at: 2026-03-01, mw: 0.1}]}\nfacility:"), "power.caps[0].mw", "power:", "below the initial owned fleet"),
    ("power cap negative", ("facility:", "power: {caps: [{at: 2026-03-01, mw: -1}]}\nfacility:"), "power.caps[0].mw", "power:", "greater than or equal to 0"),
    # served models
    ("duplicate model name", ("pricing:\n  input", SECOND_MODEL + "pricing:\n  input"), "models[1].name", "{name: chat-70b", "duplicate model name"),
    ("pool listed twice", ("pools: [h100-owned, h100-cloud]", "pools: [h100-owned, h100-owned]"), "models[0].pools", "pools: [h100-owned, h100-owned]", "listed twice"),
    ("model without pools", ("    pools: [h100-owned, h100-cloud]\n", ""), "models[0]", "- name: chat-70b", "list the 'pools'"),
    ("model without capacity", (CAPACITY, ""), "models[0]", "- name: chat-70b", "give 'capacity_rps'"),
    ("gpus per replica zero", ("gpus_per_replica: 4", "gpus_per_replica: 0"), "models[0].gpus_per_replica", "gpus_per_replica: 0", "greater than or equal to 1"),
    ("replica differs from tp group", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 8, dtype: fp8}\n"), "models[0].gpus_per_replica", "gpus_per_replica: 4", "a replica is its parallel group"),
    ("launch after unknown job", ("      base_rps: 80\n", "      base_rps: 80\n      start: {after_job: pretrain, delay: 14d}\n"), "models[0].demand.start.after_job", "after_job", "unknown training job"),
    ("base rate with piecewise", ("growth: {kind: exponential, rate_per_month: 0.15}", "growth: {kind: piecewise, points: [{at: 2026-03-01, rps: 80}]}"), "models[0].demand", "    demand:", "not used with piecewise"),
    ("base rate missing", ("      base_rps: 80\n", ""), "models[0].demand", "    demand:", "'base_rps' is required"),
    ("base rate above limit", ("base_rps: 80", "base_rps: 2.0e+9"), "models[0].demand.base_rps", "base_rps: 2.0e+9", "less than or equal to 1000000000"),
    ("base rate not finite", ("base_rps: 80", "base_rps: .inf"), "models[0].demand.base_rps", "base_rps: .inf", "finite number"),
    ("piecewise without points", ("      base_rps: 80\n      growth: {kind: exponential, rate_per_month: 0.15}", "      growth: {kind: piecewise}"), "models[0].demand.growth", "kind: piecewise", "needs 'points'"),
    ("piecewise rate negative", ("      base_rps: 80\n      growth: {kind: exponential, rate_per_month: 0.15}", "      growth: {kind: piecewise, extrapolate: hold, points: [{at: 2026-03-01, rps: -80}]}"), "models[0].demand.growth.points[0].rps", "kind: piecewise", "greater than or equal to 0"),
    ("linear decline below minus one", ("growth: {kind: exponential, rate_per_month: 0.15}", "growth: {kind: linear, increase_per_month: -2}"), "models[0].demand.growth.increase_per_month", "kind: linear", "greater than or equal to -1"),
    ("logistic ceiling not above one", ("growth: {kind: exponential, rate_per_month: 0.15}", "growth: {kind: logistic, ceiling: 1, rate_per_month: 0.3}"), "models[0].demand.growth.ceiling", "kind: logistic", "greater than 1"),
    ("logistic rate zero", ("growth: {kind: exponential, rate_per_month: 0.15}", "growth: {kind: logistic, ceiling: 5, rate_per_month: 0}"), "models[0].demand.growth.rate_per_month", "kind: logistic", "greater than 0"),
    ("exponential rate minus one", ("rate_per_month: 0.15", "rate_per_month: -1"), "models[0].demand.growth.rate_per_month", "rate_per_month: -1", "greater than -1"),
    ("exponential rate above 10", ("rate_per_month: 0.15", "rate_per_month: 11"), "models[0].demand.growth.rate_per_month", "rate_per_month: 11", "less than or equal to 10"),
    ("amplitude negative", ("weekly_amplitude: 0.1", "weekly_amplitude: -0.1"), "models[0].demand.seasonality.weekly_amplitude", "weekly_amplitude: -0.1", "greater than or equal to 0"),
    ("peak hour 24", ("peak_hour: 17", "peak_hour: 24"), "models[0].demand.seasonality.peak_hour", "peak_hour: 24", "less than 24"),
    ("peak weekday 7", ("peak_weekday: 2", "peak_weekday: 7"), "models[0].demand.seasonality.peak_weekday", "peak_weekday: 7", "less than or equal to 6"),
    ("unknown noise", ("      input_tokens: 1200\n", "      noise: gaussian\n      input_tokens: 1200\n"), "models[0].demand.noise", "gaussian", "'poisson' or 'none'"),
    ("tokens negative", ("input_tokens: 1200", "input_tokens: -1"), "models[0].demand.input_tokens", "input_tokens: -1", "greater than or equal to 0"),
    ("subscription requests zero", ("      output_tokens: 300\n", "      output_tokens: 300\n    subscription: {usd_per_month: 20, requests_per_day: 0}\n"), "models[0].subscription.requests_per_day", "subscription:", "greater than 0"),
    ("api unknown mode", ("      output_tokens: 300\n", "      output_tokens: 300\n    api: {mode: spill, input_usd_per_1m: 3, output_usd_per_1m: 15}\n"), "models[0].api.mode", "api:", "'overflow' or 'all'"),
    ("api rate limit zero", ("      output_tokens: 300\n", "      output_tokens: 300\n    api: {input_usd_per_1m: 3, output_usd_per_1m: 15, rate_limit_rps: 0}\n"), "models[0].api.rate_limit_rps", "api:", "greater than 0"),
    ("api missing price", ("      output_tokens: 300\n", "      output_tokens: 300\n    api: {input_usd_per_1m: 3}\n"), "models[0].api.output_usd_per_1m", "api:", "required"),
    ("serving unknown model", (CAPACITY, "    serving: {model: llama-9-900b, tp: 4, dtype: fp8}\n"), "models[0].serving.model", "serving:", "unknown model 'llama-9-900b'"),
    ("serving unknown gpu", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, gpu: TPUv5}\n"), "models[0].serving.gpu", "serving:", "unknown GPU 'TPUv5'"),
    ("serving tp above 64", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 128, dtype: fp8}\n"), "models[0].serving.tp", "serving:", "less than or equal to 64"),
    ("serving unknown dtype", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: int4}\n"), "models[0].serving.dtype", "serving:", "'bf16', 'fp16', 'fp8' or 'fp4'"),
    ("serving max batch zero", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, max_batch: 0}\n"), "models[0].serving.max_batch", "serving:", "greater than or equal to 1"),
    ("serving too few probe requests", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, probe_requests: 10}\n"), "models[0].serving.probe_requests", "serving:", "greater than or equal to 200"),
    ("serving length trace missing", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, lengths: no-such-trace.csv}\n"), "models[0].serving.lengths", "serving:", "cannot read it"),
    ("slo percentile above 100", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, slo: {ttft_percentile: 101}}\n"), "models[0].serving.slo.ttft_percentile", "serving:", "less than or equal to 100"),
    ("slo percentile zero", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, slo: {tpot_percentile: 0}}\n"), "models[0].serving.slo.tpot_percentile", "serving:", "greater than 0"),
    ("slo latency zero", (CAPACITY, "    serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, slo: {ttft_s: 0}}\n"), "models[0].serving.slo.ttft_s", "serving:", "greater than 0"),
    ("slo curve load not increasing", ("capacity_rps: 5.0 ", "capacity_rps: 5.0\n    slo_curve: {load: [0.5, 0.2], attainment: [1, 0.9]} "), "models[0].slo_curve", "slo_curve:", "'load' must increase"),
    ("slo curve lengths differ", ("capacity_rps: 5.0 ", "capacity_rps: 5.0\n    slo_curve: {load: [0.2, 0.5], attainment: [1]} "), "models[0].slo_curve", "slo_curve:", "same length"),
    ("slo curve load above one", ("capacity_rps: 5.0 ", "capacity_rps: 5.0\n    slo_curve: {load: [0.2, 1.5], attainment: [1, 0.5]} "), "models[0].slo_curve.load[1]", "slo_curve:", "less than or equal to 1"),
    ("slo curve empty", ("capacity_rps: 5.0 ", "capacity_rps: 5.0\n    slo_curve: {load: [], attainment: []} "), "models[0].slo_curve.load", "slo_curve:", "at least 1 item"),
    # prices, money and energy
    ("token price negative", ("output_usd_per_1m: 2.50", "output_usd_per_1m: -2.50"), "pricing.output_usd_per_1m", "output_usd_per_1m: -2.50", "greater than or equal to 0"),
    ("price decline of 100 percent", ("  output_usd_per_1m: 2.50\n", "  output_usd_per_1m: 2.50\n  decline_per_year: 1\n"), "pricing.decline_per_year", "decline_per_year", "less than 1"),
    ("financing share above one", ("facility:", "financing: {share_of_capex: 1.5}\nfacility:"), "financing.share_of_capex", "financing:", "less than or equal to 1"),
    ("financing rate above one", ("facility:", "financing: {rate_per_year: 9}\nfacility:"), "financing.rate_per_year", "financing:", "less than or equal to 1"),
    ("financing term zero", ("facility:", "financing: {share_of_capex: 0.5, term_years: 0}\nfacility:"), "financing.term_years", "financing:", "greater than 0"),
    ("alert utilization above one", ("facility:", "alerts: {max_utilization: 90}\nfacility:"), "alerts.max_utilization", "alerts:", "less than or equal to 1"),
    ("pue above five", ("pue: 1.3", "pue: 6"), "energy.pue", "pue: 6", "less than or equal to 5"),
    ("draw fraction above one", ("draw_fraction: 0.75", "draw_fraction: 1.75"), "energy.draw_fraction", "draw_fraction: 1.75", "less than or equal to 1"),
    ("server power factor below one", ("idle_draw_fraction: 0.3}", "idle_draw_fraction: 0.3, server_power_factor: 0.5}"), "energy.server_power_factor", "server_power_factor", "greater than or equal to 1"),
    ("running cost negative", ("usd_per_month: 40000", "usd_per_month: -40000"), "other_costs.usd_per_month", "usd_per_month: -40000", "greater than or equal to 0"),
    # training
    ("unknown scheduling policy", ("policy: easy_backfill", "policy: round_robin"), "training.policy", "round_robin", "'fifo', 'priority'"),
    ("training review interval zero", ("policy: easy_backfill\n", "policy: easy_backfill\n  review_every: 0h\n"), "training.review_every", "review_every", "positive duration"),
    ("job unknown pool", (JOB, JOB.replace("pool: h100-owned", "pool: h100-owend")), "training.jobs[0].pool", "h100-owend", "unknown pool"),
    ("job larger than pool", (JOB, JOB.replace("gpus: 64", "gpus: 4096")), "training.jobs[0].gpus", "gpus: 4096", "never has more than 384"),
    ("job gpus zero", (JOB, JOB.replace("gpus: 64", "gpus: 0")), "training.jobs[0].gpus", "gpus: 0", "greater than or equal to 1"),
    ("duplicate job name", ("  streams:\n", "    - {name: finetune-v2, pool: h100-owned, gpus: 8, duration: 1d}\n  streams:\n"), "training.jobs[1].name", "duration: 1d}", "duplicate job name"),
    ("job sized twice", ("duration: 10d, submit", "duration: 10d, flops: 1.0e+21, submit"), "training.jobs[0]", "flops:", "exactly one of 'duration', 'flops'"),
    ("job params without tokens", ("duration: 10d, submit", "params: 8.0e+9, submit"), "training.jobs[0]", "params:", "go together"),
    ("job duration zero", ("duration: 10d, submit", "duration: 0d, submit"), "training.jobs[0].duration", "duration: 0d", "positive duration"),
    ("job mfu above one", ("duration: 10d, submit", "duration: 10d, mfu: 1.5, submit"), "training.jobs[0].mfu", "mfu: 1.5", "less than or equal to 1"),
    ("job unknown dtype", ("duration: 10d, submit", "duration: 10d, dtype: fp4, submit"), "training.jobs[0].dtype", "dtype: fp4", "'bf16' or 'fp8'"),
    ("checkpoint interval zero", ("checkpoint_interval: 1h,", "checkpoint_interval: 0h,"), "training.jobs[0].checkpoint_interval", "checkpoint_interval: 0h", "leave it out for no checkpoints"),
    ("job failure rate negative", ("restart_time: 10min}", "restart_time: 10min, failure_rate_per_gpu_hour: -1}"), "training.jobs[0].failure_rate_per_gpu_hour", "failure_rate_per_gpu_hour", "greater than or equal to 0"),
    ("stream unknown pool", ("{name: experiments, pool: h100-owned", "{name: experiments, pool: gpu-farm"), "training.streams[0].pool", "gpu-farm", "unknown pool"),
    ("stream arrivals zero", ("arrivals_per_hour: 0.5", "arrivals_per_hour: 0"), "training.streams[0].arrivals_per_hour", "arrivals_per_hour: 0", "greater than 0"),
    ("stream size larger than pool", ("choices: [1, 2, 4, 8]", "choices: [1, 2, 4, 8192]"), "training.streams[0].gpus", "8192", "never has more than 384"),
    # uncertain inputs (drawn once per path)
    ("uncertain lognormal p90 below median", (RATE, "rate_per_month: {dist: lognormal, median: 0.15, p90: 0.05}}"), "models[0].demand.growth.rate_per_month", "p90: 0.05", "0 < median < p90"),
    ("uncertain normal sd negative", (RATE, "rate_per_month: {dist: normal, mean: 0.15, sd: -0.05}}"), "models[0].demand.growth.rate_per_month", "sd: -0.05", "standard deviation must be >= 0"),
    ("uncertain choice empty", (RATE, "rate_per_month: {dist: choice, values: []}}"), "models[0].demand.growth.rate_per_month", "values: []", "must not be empty"),
    ("uncertain choice weights mismatch", (RATE, "rate_per_month: {dist: choice, values: [0.1, 0.2], weights: [1]}}"), "models[0].demand.growth.rate_per_month", "weights: [1]", "'weights' must match 'values'"),
    ("uncertain weight negative", (RATE, "rate_per_month: {dist: choice, values: [0.1, 0.2], weights: [1, -1]}}"), "models[0].demand.growth.rate_per_month.weights", "weights: [1, -1]", "greater than or equal to 0"),
    ("uncertain triangular out of order", (RATE, "rate_per_month: {dist: triangular, low: 0.1, mode: 0.3, high: 0.2}}"), "models[0].demand.growth.rate_per_month", "triangular", "low <= mode <= high"),
    ("uncertain uniform reversed", (RATE, "rate_per_month: {dist: uniform, low: 0.3, high: 0.1}}"), "models[0].demand.growth.rate_per_month", "low: 0.3", "needs low <= high"),
    ("uncertain parameter missing", (RATE, "rate_per_month: {dist: lognormal, median: 0.15}}"), "models[0].demand.growth.rate_per_month", "median: 0.15}", "missing p90"),
    ("uncertain unknown distribution", (RATE, "rate_per_month: {dist: gamma, shape: 2}}"), "models[0].demand.growth.rate_per_month.dist", "gamma", "'lognormal', 'triangular'"),
    ("uncertain parameter not a number", (RATE, "rate_per_month: {dist: uniform, low: fast, high: 0.3}}"), "models[0].demand.growth.rate_per_month.low", "low: fast", "expected a number or a duration"),
    ("uncertain median out of range", (RATE, "rate_per_month: {dist: uniform, low: 20, high: 30}}"), "models[0].demand.growth.rate_per_month", "low: 20", "less than or equal to 10"),
    ("uncertain section entry impossible", ("fleet:\n", "uncertain:\n  fleet.pools[0].count: {dist: normal, mean: 256, sd: -1}\nfleet:\n"), "uncertain.fleet.pools[0].count", "sd: -1", "standard deviation must be >= 0"),
    # variants
    ("variant unknown field", ("    fleet.pools[1].count: 192", "    fleet.pools[1].cout: 192"), "variants.rent-headroom-only.fleet.pools[1].cout", "cout: 192", "did you mean 'count'"),
    ("variant value out of range", ("    fleet.pools[1].count: 192", "    fleet.pools[1].count: -192"), "variants.rent-headroom-only.fleet.pools[1].count", "count: -192", "greater than or equal to 0"),
    ("variant breaks a cross-field rule", ("    fleet.pools[1].count: 192", "    fleet.pools[1].name: h100-owned"), "variants.rent-headroom-only.fleet.pools[1].name", "pools[1].name: h100-owned", "duplicate pool name"),
    ("variant not a mapping", ("  buy-more-early:\n    fleet.pools[0].changes: [{at: 2026-06-01, add: 256}]", "  buy-more-early: 3"), "variants.buy-more-early", "buy-more-early: 3", "valid dictionary"),
    # found by building this corpus: accepted or misreported before
    ("field of another acquisition kind", ("{type: owned, price_usd: 33000, depreciation_years: 5}", "{usd_per_gpu_hour: 2.0}"), "fleet.pools[0].acquisition.usd_per_gpu_hour", "usd_per_gpu_hour: 2.0", "check its 'type'"),
    ("date as a bare number", ("start: 2026-03-01", "start: 2026"), "horizon.start", "start: 2026", "expected an ISO date"),
    ("date in free text", ("start: 2026-03-01", "start: March 2026"), "horizon.start", "start: March 2026", "expected an ISO date"),
    ("duration without unit", ("  step: 1h", "  step: '3600'"), "horizon.step", "step: '3600'", "needs a unit"),
    ("boolean as a count", ("      count: 256", "      count: yes"), "fleet.pools[0].count", "count: yes", "booleans"),
    ("boolean as a price", ("price_usd: 33000", "price_usd: on"), "fleet.pools[0].acquisition.price_usd", "price_usd: on", "booleans"),
    ("distribution with a parameter it ignores", ("rate_per_month: 0.15}", "rate_per_month: {dist: uniform, low: 0.1, high: 0.3, mode: 0.2}}"), "models[0].demand.growth.rate_per_month", "rate_per_month: {dist", "would be ignored"),
    ("stream ends before it starts", ("arrivals_per_hour: 0.5,", "arrivals_per_hour: 0.5, start: 2026-06-01, end: 2026-05-01,"), "training.streams[0].end", "arrivals_per_hour: 0.5, start", "not after the stream's start"),
    ("alert band inverted", ("energy: {pue", "alerts: {min_utilization: 0.9, max_utilization: 0.3}\nenergy: {pue"), "alerts.min_utilization", "alerts:", "above max_utilization"),
    ("same gpu twice in other case", ("fleet:\n", "gpus:\n  h100: {price_usd: 1}\n  H100: {price_usd: 2}\nfleet:\n"), "gpus.H100", "H100: {price_usd: 2}", "same GPU type"),
    ("stream size choices empty", ("gpus: {choices: [1, 2, 4, 8]}", "gpus: {choices: []}"), "training.streams[0].gpus.choices", "choices: []", "at least 1 item"),
    ("stream size weights mismatch", ("gpus: {choices: [1, 2, 4, 8]}", "gpus: {choices: [1, 2, 4, 8], weights: [1, 2]}"), "training.streams[0].gpus", "weights: [1, 2]", "'weights' must match"),
    ("negative launch delay", ("      base_rps: 80\n", "      base_rps: 80\n      start: {after_job: finetune-v2, delay: -1d}\n"), "models[0].demand.start.delay", "delay: -1d", "cannot be negative"),
    ("variant key unreadable", ("    fleet.pools[1].count: 192", "    fleet..pools[1].count: 192"), "variants.rent-headroom-only.fleet..pools[1].count", "fleet..pools", "cannot read the field path"),
    ("variant list item missing", ("    fleet.pools[1].count: 192", "    fleet.pools[5].count: 192"), "variants.rent-headroom-only.fleet.pools[5].count", "pools[5].count", "no such list item"),
    ("variant horizon uneven", ("    fleet.pools[1].count: 192", "    horizon.step: 7h"), "variants.rent-headroom-only.horizon.step", "horizon.step: 7h", "whole number"),
    ("job trace file missing", ("  streams:\n", "  traces:\n    - name: replay\n      pool: h100-owned\n      csv: missing.csv\n  streams:\n"), "training.traces[0].csv", "csv: missing.csv", "cannot read it"),
    ("growth curve file missing", ("base_rps: 80\n      growth: {kind: exponential, rate_per_month: 0.15}", "growth: {kind: piecewise, csv: nope.csv}"), "models[0].demand.growth.csv", "csv: nope.csv", "cannot read it"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_invalid_scenario_exits_2_with_path_and_line(case, tmp_path):
    _, (old, new), path, line_text, words = case
    assert old in LAUNCH, f"edit does not apply: {old!r}"
    text = LAUNCH.replace(old, new, 1)
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), "--quiet"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(f"error: {path}: "), message
    assert words in message
    if line_text:
        assert message.endswith(f"(line {_line_of(text, line_text)})"), message
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.yaml"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("- a\n- b\n", "expected a mapping"),
        ("42\n", "expected a mapping"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_empty_and_non_mapping_files(text, words, tmp_path):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert result.exit_code == 2
    assert words in result.stderr and "Traceback" not in result.stderr


def test_python_tag_never_executes(tmp_path):
    marker = tmp_path / "pwned"
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(f'name: !!python/object/apply:os.system ["touch {marker}"]\n')
    proc = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "run", str(scenario), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "tags never construct objects" in proc.stderr and "(line 1)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists() and not (tmp_path / "o").exists()


def test_billion_laughs_is_refused_quickly(tmp_path, monkeypatch):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    scenario = tmp_path / "laughs.yaml"
    scenario.write_text("\n".join(lines) + "\n")
    # 9**9 = 387 million values if expanded: the walk stops at the first value past the limit.
    visited = []
    walk = yaml_source._map_lines

    def counted(node, loc, lines, count):
        visited.append(loc)
        return walk(node, loc, lines, count)

    monkeypatch.setattr(yaml_source, "_map_lines", counted)
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert result.exit_code == 2 and "refusing to expand" in result.stderr
    assert len(visited) == yaml_source.MAX_NODES + 1


def test_missing_file_exits_2(tmp_path):
    result = CliRunner().invoke(main, ["run", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2


def test_bad_set_override_names_the_field(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(LAUNCH)
    result = CliRunner().invoke(main, ["validate", str(scenario), "--set", "fleet.pools[0].count=-3"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: fleet.pools[0].count: input should be greater than or equal to 0")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--set", "horizon.start=2026-13-01"], "horizon.start"),
        (["--set", "horizon.step=1ms"], "use a coarser step"),
        (["--set", "models[0].demand.growth.rate_per_month=10", "--accept", "growth"], "grows to"),
        (["--set", "fleet.pools[0].orders=[{at: 2026-05-01, count: 8, lead_time: -5d}]"], "cannot be negative"),
        (["--set", "fleet.pools[1].acquisition={type: reserved, usd_per_gpu_hour: 2, term: 0d}"], "positive duration"),
        (["--set", "models[0].gpus_per_replica=512"], "never hold more than"),
        (["--out", "/proc/fleetcast-cannot-write"], "cannot write"),
        (["--scheduler", "garbage"], "expected an address"),
    ],
)
def test_review_findings_exit_2_with_one_line(args, words, tmp_path):
    out = [] if "--out" in args else ["--out", str(tmp_path / "o")]
    result = CliRunner().invoke(main, ["run", str(Path(__file__).parents[1] / "scenarios" / "launch.yaml"), *out, *args, "-q"])
    assert result.exit_code == 2, result.output
    assert words in result.stderr and "\n" not in result.stderr.strip() and "Traceback" not in result.stderr


def test_duplicate_keys_and_impossible_dates_in_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nname: y\n")
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2 and "error: name: appears twice in the same mapping (line 2)" in result.stderr
    bad.write_text("name: x\nhorizon: {start: 2026-13-01, duration: 1d}\n")
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2 and "month must be in 1..12" in result.stderr
    assert result.stderr.startswith("error: horizon.start: '2026-13-01' is not a valid date") and "(line 2)" in result.stderr


def test_a_serving_dtype_problem_names_the_dtype(tmp_path):
    growth = Path(__file__).parents[1] / "scenarios" / "growth.yaml"
    result = CliRunner().invoke(main, ["validate", str(growth), "--set", "fleet.pools[0].gpu=A100-80GB"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: models[0].serving.dtype: A100-80GB has no FP8 support")
    assert "(pool 'h100')" in result.stderr


def test_a_serving_gpu_that_contradicts_the_pool_names_both(tmp_path):
    growth = Path(__file__).parents[1] / "scenarios" / "growth.yaml"
    result = CliRunner().invoke(main, ["validate", str(growth), "--set", "models[0].serving.gpu=B200"])
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: models[0].serving.gpu: is B200 but pool 'h100' holds H100")
    assert result.stderr.rstrip().endswith(")") and "(line " in result.stderr
    # Naming the pool's own GPU (in any case) is accepted.
    ok = CliRunner().invoke(main, ["validate", str(growth), "--set", "models[0].serving.gpu=h100"])
    assert ok.exit_code == 0, ok.stderr


def test_custom_gpu_types_are_usable(tmp_path):
    scenario = tmp_path / "chip.yaml"
    scenario.write_text(
        "name: chip\nhorizon: {start: 2026-01-01, duration: 2d}\n"
        "gpus:\n  MyChip: {tflops_bf16: 500, memory_gb: 96, memory_tbps: 3.0, tdp_w: 600, price_usd: 20000, cloud_usd_per_gpu_hour: 2.0}\n"
        "fleet:\n  pools:\n    - {name: p, gpu: mychip, count: 8}\n"
        "models:\n  - {name: m, pools: [p], capacity_rps: 1, demand: {base_rps: 2}}\n")
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 0, result.output


def test_a_bad_csv_row_names_the_file_and_its_line(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(LAUNCH.replace("  streams:\n", "  traces:\n    - name: replay\n      pool: h100-owned\n"
                                                      "      csv: jobs.csv\n  streams:\n"))
    line = _line_of(scenario.read_text(), "csv: jobs.csv")
    for rows, words in (("1d,8,2h\n2d,4,3600\n", "jobs.csv line 3: duration: a duration needs a unit"),
                        ("1d,0,2h\n", "jobs.csv line 2: gpus: input should be greater than or equal to 1, got 0"),
                        ("01/06/2026,8,2h\n", "jobs.csv line 2: submit_time: expected a date")):
        (tmp_path / "jobs.csv").write_text("submit_time,gpus,duration\n" + rows)
        result = CliRunner().invoke(main, ["validate", str(scenario)])
        assert result.exit_code == 2
        assert result.stderr.startswith("error: training.traces[0].csv: ") and words in result.stderr, result.stderr
        assert result.stderr.strip().endswith(f"(line {line})")
    # A CSV saved with a byte-order mark (as Excel does) reads like any other.
    (tmp_path / "jobs.csv").write_bytes("\ufeffsubmit_time,gpus,duration\n1d,8,2h\n".encode())
    assert CliRunner().invoke(main, ["validate", str(scenario)]).exit_code == 0


def test_iso_dates_in_their_usual_forms_are_accepted():
    from simulator.units import parse_timestamp

    for text in ("2026-03-01", "2026-03-01T06:00", "2026-03-01 06:00:00.5", "2026-03-01t06:00z",
                 "2026-03-01T08:00:00+02", "2026-03-01T08:00+02:00"):
        assert parse_timestamp(text).date().isoformat() == "2026-03-01", text


def test_a_variant_naming_a_gpu_twice_is_refused_at_its_override(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(LAUNCH.replace("fleet:\n", "gpus:\n  H100: {price_usd: 30000}\nfleet:\n", 1)
                        + "  cheap:\n    gpus.h100: {price_usd: 1}\n")
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: variants.cheap.gpus.h100: ")
    assert "same GPU type" in result.stderr and result.stderr.strip().endswith(
        f"(line {_line_of(scenario.read_text(), 'gpus.h100')})")


@pytest.mark.parametrize(("content", "line"), [(b"\x00\x01 ::: [unclosed", 1), (b"name: launch\n\x07\n", 2),
                                               (b"name: a\x00b\n", 1)])
def test_a_file_with_nul_or_control_characters_exits_2_with_its_line(content, line, tmp_path):
    scenario = tmp_path / "binary.yaml"
    scenario.write_bytes(content)
    for command in (["validate", str(scenario)], ["run", str(scenario), "--out", str(tmp_path / "o"), "-q"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        assert "control character" in result.stderr and f"(line {line})" in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_an_endless_stream_given_as_the_scenario_is_refused_at_the_size_limit(tmp_path):
    # A device or a pipe has no size to check first (/dev/urandom ate all the memory).
    fifo = tmp_path / "endless.yaml"
    code, stderr = fed_a_stream_that_never_ends(["validate", str(fifo)], fifo, b"# and more\n" * 100_000, 64)
    assert code == 2, stderr
    assert stderr.startswith("error: ") and "more than 5,000,000 bytes" in stderr and stderr.count("\n") == 1


@pytest.mark.parametrize("written", ["151", '"151"', "151.5", "{dist: uniform, low: 151, high: 160}"])
def test_a_bare_number_where_a_duration_is_expected_is_refused_like_the_quoted_one(tmp_path, written):
    # `duration: 151` was read as 151 seconds while "151" was refused: a user writing 151
    # more likely means days. Both are refused, naming the field (a distribution's parameter
    # by its own name) and saying how to write it.
    scenario = tmp_path / "s.yaml"
    scenario.write_text(LAUNCH.replace(JOB, JOB.replace("duration: 10d", f"duration: {written}")))
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert result.exit_code == 2
    field = "training.jobs[0].duration" + (".low" if "dist" in written else "")
    number = written.strip('"').removeprefix("{dist: uniform, low: ").split(",")[0]
    assert result.stderr.startswith(f"error: {field}: a duration needs a unit, e.g. '{number}d', '{number}h' or "
                                    f"'{number}s'"), result.stderr
    assert f"(line {_line_of(LAUNCH, JOB)})" in result.stderr and result.stderr.count("\n") == 1


def test_zero_needs_no_unit_and_seconds_fields_read_durations(tmp_path):
    # 0 is 0 in any unit; a field named in seconds (tpot_s) takes a duration as every other
    # field does (80ms was refused) as well as its bare seconds.
    import simulator

    text = (Path(__file__).parents[1] / "scenarios" / "launch.yaml").read_text()
    text = text.replace("restart_time: 10min}", "restart_time: 0}")
    text = text.replace("tpot_s: 0.1", "tpot_s: 80ms").replace("ttft_s: 2.0", "ttft_s: 1.5")
    assert "tpot_s: 80ms" in text and "restart_time: 0}" in text
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    loaded = simulator.load_scenario(scenario)
    assert loaded.training.jobs[0].restart_time == 0.0
    slo = loaded.models[0].serving.slo
    assert (slo.tpot_s, slo.ttft_s) == (0.08, 1.5)


def test_an_error_at_a_distribution_median_quotes_the_distribution_as_written(tmp_path):
    # The median of uniform(-10d, 1d) is -4.5 days: the error quoted -388800.0 (seconds the
    # user never wrote).
    scenario = tmp_path / "s.yaml"
    scenario.write_text(LAUNCH.replace(JOB, JOB.replace("duration: 10d", "duration: {dist: uniform, low: -10d, high: 1d}")))
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert result.exit_code == 2
    assert result.stderr == ("error: training.jobs[0].duration: a duration cannot be negative, at the median of "
                             f"{{dist: uniform, low: -10d, high: 1d}} (line {_line_of(LAUNCH, JOB)})\n")
