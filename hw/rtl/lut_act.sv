`default_nettype none
// Unary activation as a 256-entry int8 -> int8 table per lane. LUT_FILE ($readmemh): 256
// words of 8 bits, entry x + 128 for input x (entry 0 is x = -128). Registered read (BRAM
// or LUTRAM), one beat per cycle, output 2 cycles after the input handshake.
module lut_act #(
    parameter int P        = 2,
    parameter     LUT_FILE = ""
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
  initial begin
    if (P < 1) $error("lut_act: P=%0d must be positive", P);
  end
  /* verilator lint_off UNDRIVEN */  // ROM: filled by $readmemh only
  logic [7:0] lut[256];
  /* verilator lint_on UNDRIVEN */
  generate
    if (LUT_FILE != "") begin : g_init
      initial $readmemh(LUT_FILE, lut);
    end
  endgenerate

  logic en, v1, v2, last1;
  logic [P*8-1:0] x1;
  assign en = !v2 || m_axis_tready;
  assign s_axis_tready = en;

  always_ff @(posedge clk) begin
    if (en) begin
      x1 <= s_axis_tdata;
      last1 <= s_axis_tlast;
      m_axis_tlast <= last1;
      for (int i = 0; i < P; i++) m_axis_tdata[8*i+:8] <= lut[{~x1[8*i+7], x1[8*i+:7]}];
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      v1 <= 1'b0;
      v2 <= 1'b0;
    end else if (en) begin
      v1 <= s_axis_tvalid;
      v2 <= v1;
    end
  end
  assign m_axis_tvalid = v2;
endmodule
`default_nettype wire
