"""``judge run --concurrency N`` against a real OpenAI-compatible server: units per second at
N = 1, 2, 4, 8 (N = 1 is the baseline of the same run), with the load average beside each figure.

The server is ``transformers serve`` (extra ``serving``) with the tiny Llama of the critic tests
(hidden 32, 2 layers, random weights, ChatML template) on the CPU, answering ``max_tokens``
tokens per unit; the campaigns are those of the critic tests (12 pointwise units, 6 pairs judged
in both orders: 24 calls per round). Each round starts from a fresh database, so nothing comes
from the cache; each N runs ``ROUNDS`` rounds, reported one by one with their min and max.
What this measures is the client and the server together on one machine: a server that batches
(vLLM, or ``transformers serve --continuous-batching``) gains more from N than one that does not.

Run: ``.venv/bin/python bench/judge_serve_bench.py [--continuous-batching] [--out FILE.json]``
(prints JSON; ``--continuous-batching`` starts the server with it: paged attention, requests
batched as they arrive).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "critic"))  # the tiny offline model and campaigns

from campaign_factory import build_annotated_campaigns  # noqa: E402
from tiny_models import build_tiny_llama  # noqa: E402

from critic.remote import RemoteOptions, judge_campaign_remote  # noqa: E402
from data.storage.engine import make_engine, upgrade_database  # noqa: E402
from tests.pg_cluster import free_port  # noqa: E402
from tests.servers import wait_until_healthy  # noqa: E402

CONCURRENCIES = (1, 2, 4, 8)
ROUNDS = 3
MAX_TOKENS = 16
SERVE = "from transformers.cli.transformers import main; main()"


def _round(folder: Path, url: str, model: Path, concurrency: int, index: int) -> dict:
    """One fresh database, both campaigns judged; units/s over the two runs' own seconds."""
    run_dir = folder / f"n{concurrency}-r{index}"
    run_dir.mkdir()
    os.environ["CRITIQUELAB_DATA_DIR"] = str(run_dir / "data")
    engine = make_engine(f"sqlite:///{run_dir / 'bench.db'}")
    upgrade_database(engine)
    build_annotated_campaigns(engine)
    load_before = os.getloadavg()[0]
    units, seconds, requests = 0, 0.0, 0
    for campaign, both_orders in (("amb", False), ("pairs", True)):
        summary = judge_campaign_remote(
            engine,
            campaign,
            RemoteOptions(
                base_url=f"{url}/v1",
                model=str(model),
                judge_name="bench",
                concurrency=concurrency,
                max_retries=0,
                timeout=300.0,
                max_tokens=MAX_TOKENS,
                vision=False,
                both_orders=both_orders,
            ),
        )
        if summary.failed:
            raise RuntimeError(f"calls failed: {summary.failed[:3]}")
        units += summary.stored
        seconds += summary.seconds
        requests += summary.requests
    engine.dispose()
    return {
        "units": units,
        "requests": requests,
        "seconds": round(seconds, 3),
        "units_per_s": round(units / seconds, 3),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
    }


def main(continuous_batching: bool = False) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="judge-serve-bench-"))
    model = build_tiny_llama(folder / "tiny-llama")
    log = folder / "serve.log"
    port = free_port()
    command = [sys.executable, "-c", SERVE, "serve", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--device", "cpu", "--log-level", "warning"]
    if continuous_batching:
        command.append("--continuous-batching")
    with log.open("ab") as sink:
        server = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, server, log, health_path="/health", ceiling_s=900)
        _round(folder, url, model, 1, -1)  # warm-up (lazy imports, first generation), not kept
        results = {}
        for concurrency in CONCURRENCIES:
            rounds = [_round(folder, url, model, concurrency, i) for i in range(ROUNDS)]
            rates = sorted(r["units_per_s"] for r in rounds)
            results[str(concurrency)] = {
                "rounds": rounds,
                "units_per_s_median": rates[len(rates) // 2],
                "units_per_s_min": rates[0],
                "units_per_s_max": rates[-1],
            }
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    baseline = results["1"]["units_per_s_median"]
    for figures in results.values():
        figures["speedup_vs_n1"] = round(figures["units_per_s_median"] / baseline, 2)
    return {
        "server": "transformers serve "
        + ("--continuous-batching" if continuous_batching else "(no continuous batching)")
        + ", CPU",
        "model": "tiny Llama (hidden 32, 2 layers, vocab 400, random weights)",
        "max_tokens": MAX_TOKENS,
        "rounds_per_n": ROUNDS,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "by_concurrency": results,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument(
        "--continuous-batching", action="store_true", help="start the server with it"
    )
    arguments = parser.parse_args()
    text = json.dumps(main(arguments.continuous_batching), indent=2)
    print(text)
    if arguments.out:
        arguments.out.write_text(text + "\n", encoding="utf-8")
