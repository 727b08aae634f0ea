`default_nettype none
// Per-channel requantisation of an int32 stream to int8 (docs/hardware.md, docs/numerics.md).
// LANES int32 lanes in, LANES int8 lanes out; channel c of lane i = g*LANES + i where g
// counts beats modulo C/LANES. RQ_FILE ($readmemh): C/LANES words of LANES*32 bits, lane i
// at bits [32i+31:32i] = {m[23:0], s}; RQ_ZP, RQ_LO, RQ_HI the zero point and clamp of every
// channel. One beat per cycle, latency 3 cycles.
module requant #(
    parameter int C       = 8,
    parameter int LANES   = 2,
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all channels
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    parameter bit RQ_LUT  = 0  // 1: the products in LUTs (rq_lane.sv, lut_mulw.sv), no DSP48E2
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  s_axis_tvalid,
    output logic                 s_axis_tready,
    input  wire  [LANES*32-1:0]  s_axis_tdata,
    input  wire                  s_axis_tlast,
    output logic                 m_axis_tvalid,
    input  wire                  m_axis_tready,
    output logic [LANES*8-1:0]   m_axis_tdata,
    output logic                 m_axis_tlast
);
  localparam int CG = C / LANES;
  localparam int GW = CG > 1 ? $clog2(CG) : 1;

  initial begin
    if (LANES < 1 || C % LANES != 0) $error("requant: LANES=%0d must divide C=%0d", LANES, C);
  end

  /* verilator lint_off UNDRIVEN */  // ROM: filled by $readmemh only
  logic [LANES*32-1:0] rqmem[CG];
  /* verilator lint_on UNDRIVEN */
  generate
    if (RQ_FILE != "") begin : g_init
      initial $readmemh(RQ_FILE, rqmem);
    end
  endgenerate

  logic en, fire;
  logic [GW-1:0] g;
  logic [LANES*32-1:0] acc0;
  logic [LANES*32-1:0] rq0;
  logic [2:0] v;
  logic [2:0] last;

  assign en = !v[2] || m_axis_tready;
  assign s_axis_tready = en;
  assign fire = s_axis_tvalid && en;

  always_ff @(posedge clk) begin
    if (en) begin
      acc0 <= s_axis_tdata;
      rq0  <= rqmem[g];
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      g <= '0;
      v <= '0;
      last <= '0;
    end else begin
      if (fire) g <= g == GW'(CG - 1) ? '0 : g + 1'b1;
      if (en) begin
        v <= {v[1:0], fire};
        last <= {last[1:0], s_axis_tlast};
      end
    end
  end

  for (genvar i = 0; i < LANES; i++) begin : g_lane
    rq_lane #(.RQ_LUT(RQ_LUT)) lane (
        .clk(clk),
        .en (en),
        .acc(acc0[32*i+:32]),
        .rq ({8'd0, rq0[32*i+:32], 8'(RQ_ZP), 8'(RQ_LO), 8'(RQ_HI)}),
        .y  (m_axis_tdata[8*i+:8])
    );
  end

  assign m_axis_tvalid = v[2];
  assign m_axis_tlast = last[2];
endmodule
`default_nettype wire
