"""The threaded C simulation's deadlock watchdog (hw/hls/bb_sim_threads.h) while a top-level
DATAFLOW region (one the testbench's thread opens, e.g. a kernel called from a test) is still
spawning its processes: its first process may fill a shallow stream and block before the
stream's consumer is spawned. The opener counts as live until it has spawned them all, so that
is no deadlock; before, on a loaded machine, the watchdog reported one (`all 1 running
processes are blocked`) and the run failed. Here the opener sleeps 200 ms between the two
spawns, far beyond the watchdog's 5 ms look.
"""

from __future__ import annotations

import subprocess

import pytest

from bbgrap_hls.codegen.csim import flags
from tests.test_hls_kernels import hls_dir

pytestmark = pytest.mark.csim

SRC = """#define BB_SIM_THREADS_IMPL
#include <chrono>
#include <cstdio>
#include <thread>
#include "bbgrap.h"

static void produce(bb::Stream<1>& s) {
  for (int i = 0; i < 8; ++i) {
    bb::Beat<1> b;
    b.d[0] = static_cast<int8_t>(i);
    s.write(b);
  }
}

static void consume(bb::Stream<1>& s, int& sum) {
  for (int i = 0; i < 8; ++i) sum += s.read().d[0];
}

int main() {
  int sum = 0;
  {
    bb::Stream<1> s("s");
    BB_FIFO_DEPTH(s, 1)
    BB_DATAFLOW_REGION()
    BB_PROCESS(produce(s);)
    std::this_thread::sleep_for(std::chrono::milliseconds(%d));
    BB_PROCESS(consume(s, sum);)
  }
  std::printf("sum %%d\\n", sum);
  return sum == 28 ? 0 : 2;
}
"""


@pytest.mark.parametrize("pause_ms", [0, 200])
def test_no_deadlock_while_the_region_still_spawns(tmp_path, pause_ms):
    (tmp_path / "t.cpp").write_text(SRC % pause_ms)
    r = subprocess.run(["g++", *flags(werror=True, threads=True, opt="-O1"), "-I", str(hls_dir()),
                        str(tmp_path / "t.cpp"), "-o", str(tmp_path / "t")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    run = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "sum 28" in run.stdout, (run.returncode, run.stdout, run.stderr[-2000:])


def test_a_real_deadlock_is_still_reported(tmp_path):
    """A consumer that never comes (the region spawns only the producer): reported, exit 1."""
    src = SRC.replace("    BB_PROCESS(consume(s, sum);)\n", "").replace("static void consume", "void consume") % 0
    (tmp_path / "t.cpp").write_text(src)
    r = subprocess.run(["g++", *flags(werror=True, threads=True, opt="-O1"), "-I", str(hls_dir()),
                        str(tmp_path / "t.cpp"), "-o", str(tmp_path / "t")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    run = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "deadlock" in run.stderr, (run.returncode, run.stderr[-2000:])
