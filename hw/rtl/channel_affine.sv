`default_nettype none
// Per-channel affine map (a BatchNorm or Mul/Add by a per-channel constant that no conv
// absorbed): acc = bias'[c] + x * w[c], then per-channel requantisation. P lanes; channel
// group g = beat index modulo C/P. One beat per cycle, output 4 cycles after the input.
// Memories ($readmemh): W_FILE C/P words of P*8 bits; B_FILE C/P words of P*32 bits;
// RQ_FILE C/P words of P*64 bits {m, s, zp, lo, hi}.
module channel_affine #(
    parameter int C       = 4,
    parameter int P       = 2,
    parameter     W_FILE  = "",
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
  end
  /* verilator lint_off UNDRIVEN */  // ROMs: filled by $readmemh only
  logic [P*8-1:0] wmem[CG];
  logic [P*32-1:0] bmem[CG];
  logic [P*64-1:0] rqmem[CG];
  /* verilator lint_on UNDRIVEN */
  generate
    if (W_FILE != "") begin : g_w
      initial $readmemh(W_FILE, wmem);
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
  logic [P*8-1:0] x1, w1;
  logic [P*32-1:0] b1, acc2;
  logic [P*64-1:0] rq1, rq2;
  assign en = !v[3] || m_axis_tready;
  assign s_axis_tready = en;
  assign fire = en && s_axis_tvalid;

  always_ff @(posedge clk) begin
    if (en) begin
      x1 <= s_axis_tdata;
      w1 <= wmem[g];
      b1 <= bmem[g];
      rq1 <= rqmem[g];
      rq2 <= rq1;
      for (int i = 0; i < P; i++)
        acc2[32*i+:32] <= b1[32*i+:32] + 32'(signed'(x1[8*i+:8]) * signed'(w1[8*i+:8]));
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
    rq_lane lane (
        .clk(clk),
        .en (en),
        .acc(signed'(acc2[32*i+:32])),
        .rq (rq2[64*i+:64]),
        .y  (m_axis_tdata[8*i+:8])
    );
  end
  assign m_axis_tvalid = v[3];
  assign m_axis_tlast = last[3] && v[3];
endmodule
`default_nettype wire
