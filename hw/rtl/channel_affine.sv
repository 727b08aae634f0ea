`default_nettype none
// Per-channel affine map (a BatchNorm or Mul/Add by a per-channel constant that no conv
// absorbed), the integer form of bbgrap_hls.quant ("affine", docs/numerics.md):
//   y = clamp(zp_out + (((x - ZP_IN)*mult[c] + bias[c] + 2^(s[c]-1)) >>> s[c]), lo, hi)
// with a signed mult (|mult| < 2^24, the quantiser's MULT_BITS: the low 25 bits of its
// 32-bit word, a 9 x 25-bit product in one DSP48E2) and a signed 64-bit bias (s = 0: no
// rounding term). P lanes; channel group g = beat index modulo C/P. One beat per cycle,
// output 4 cycles after the input (load, multiply, add bias, round and clamp).
// Memories ($readmemh): M_FILE  C/P words of P*32 bits (mult, two's complement)
//                       B_FILE  C/P words of P*64 bits (bias, two's complement)
//                       RQ_FILE C/P words of P*32 bits {s, zp_out, lo, hi}
module channel_affine #(
    parameter int C       = 4,
    parameter int P       = 2,
    parameter int ZP_IN   = 0,
    parameter     M_FILE  = "",
    parameter     B_FILE  = "",
    parameter     RQ_FILE = ""
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [P*8-1:0]   s_axis_tdata,
    input  wire              s_axis_tlast,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [P*8-1:0]   m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int CG = C / P;
  localparam int GW = CG > 1 ? $clog2(CG) : 1;
  initial begin
    if (P < 1 || C % P != 0) $error("channel_affine: P=%0d must divide C=%0d", P, C);
    if (ZP_IN < -128 || ZP_IN > 127) $error("channel_affine: ZP_IN=%0d outside int8", ZP_IN);
  end
  /* verilator lint_off UNDRIVEN */  // ROMs: filled by $readmemh only
  logic [P*32-1:0] mmem[CG];
  logic [P*64-1:0] bmem[CG];
  logic [P*32-1:0] rqmem[CG];
  /* verilator lint_on UNDRIVEN */
  generate
    if (M_FILE != "") begin : g_m
      initial $readmemh(M_FILE, mmem);
    end
    if (B_FILE != "") begin : g_b
      initial $readmemh(B_FILE, bmem);
    end
    if (RQ_FILE != "") begin : g_rq
      initial $readmemh(RQ_FILE, rqmem);
    end
  endgenerate

  logic en, fire;
  logic [GW-1:0] g;
  logic [3:0] v, last;
  logic [P*8-1:0] x1;
  logic [P*32-1:0] cfg1, cfg2, cfg3;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [P*32-1:0] m1;  // bits 31:25 of each word: the multiplier's sign extension
  /* verilator lint_on UNUSEDSIGNAL */
  logic signed [8:0] xa[P];
  logic signed [24:0] ma[P];
  logic signed [33:0] pr[P];  // 9 x 25 bits: one DSP48E2
  always_comb begin
    for (int i = 0; i < P; i++) begin
      xa[i] = 9'(signed'(x1[8*i+:8])) - 9'(ZP_IN);
      ma[i] = signed'(m1[32*i+:25]);
      pr[i] = xa[i] * ma[i];
    end
  end
  logic [P*64-1:0] b1, b2, p2, v3;
  assign en = !v[3] || m_axis_tready;
  assign s_axis_tready = en;
  assign fire = en && s_axis_tvalid;

  always_ff @(posedge clk) begin
    if (en) begin
      x1 <= s_axis_tdata;
      m1 <= mmem[g];
      b1 <= bmem[g];
      cfg1 <= rqmem[g];
      b2 <= b1;
      cfg2 <= cfg1;
      cfg3 <= cfg2;
      for (int i = 0; i < P; i++) begin
        p2[64*i+:64] <= 64'(pr[i]);
        v3[64*i+:64] <= p2[64*i+:64] + b2[64*i+:64];
      end
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
        v <= {v[2:0], fire};
        last <= {last[2:0], s_axis_tlast};
      end
    end
  end

  for (genvar i = 0; i < P; i++) begin : g_lane
    rq_round round (
        .clk(clk),
        .en (en),
        .v  (v3[64*i+:64]),
        .cfg(cfg3[32*i+:32]),
        .y  (m_axis_tdata[8*i+:8])
    );
  end
  assign m_axis_tvalid = v[3];
  assign m_axis_tlast = last[3] && v[3];
endmodule
`default_nettype wire
