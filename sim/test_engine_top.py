"""cocotb testbench of the layer engine's top: the package's (`bbgrap_hls.rtlsim.engine_tb`,
what ``bbgrap-hls sim`` runs on a generated engine design). `sim.engine_top` runs it directly;
this name re-exports it for a runner pointed at ``sim.test_engine_top``."""

from bbgrap_hls.rtlsim.engine_tb import engine_frames  # noqa: F401
