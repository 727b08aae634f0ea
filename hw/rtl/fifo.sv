`default_nettype none
// Synchronous FIFO: one write port, one registered read port (BRAM/LUTRAM inferable).
// Holds DEPTH beats in its memory plus one in the output register. A beat written in
// cycle t is visible on m_axis in cycle t+2 at the earliest; one beat per cycle in and out.
module fifo #(
    parameter int WIDTH = 8,
    parameter int DEPTH = 16
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [WIDTH-1:0] s_axis_tdata,
    input  wire              s_axis_tlast,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [WIDTH-1:0] m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int AW = DEPTH > 1 ? $clog2(DEPTH) : 1;
  localparam logic [AW:0] FULL = (AW + 1)'(DEPTH);
  localparam logic [AW-1:0] TOP = AW'(DEPTH - 1);

  initial begin
    if (WIDTH < 1) $error("fifo: WIDTH=%0d must be positive", WIDTH);
    if (DEPTH < 2) $error("fifo: DEPTH=%0d must be at least 2", DEPTH);
  end

  // block RAM from 1,024 data bits and 65 words on, LUTRAM below, as the cost model counts a
  // FIFO (`memory(8·lanes, depth)`); left to itself Yosys takes LUTRAM for a few hundred words
  /* verilator lint_off UNUSEDPARAM */  // read by synthesis only (the ram_style attribute)
  localparam MEM_STYLE = DEPTH > 64 && DEPTH * WIDTH >= 1024 ? "block" : "distributed";
  /* verilator lint_on UNUSEDPARAM */
  (* ram_style = MEM_STYLE *)
  logic [WIDTH:0] mem[DEPTH];
  logic [AW-1:0] wp, rp;
  logic [AW:0] cnt;
  logic wr, rd;

  assign s_axis_tready = cnt != FULL;
  assign wr = s_axis_tvalid && s_axis_tready;
  assign rd = cnt != '0 && (!m_axis_tvalid || m_axis_tready);

  always_ff @(posedge clk) begin
    if (wr) mem[wp] <= {s_axis_tlast, s_axis_tdata};
    if (rd) {m_axis_tlast, m_axis_tdata} <= mem[rp];
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wp <= '0;
      rp <= '0;
      cnt <= '0;
      m_axis_tvalid <= 1'b0;
    end else begin
      if (wr) wp <= wp == TOP ? '0 : wp + 1'b1;
      if (rd) rp <= rp == TOP ? '0 : rp + 1'b1;
      cnt <= cnt + (AW + 1)'(wr) - (AW + 1)'(rd);
      if (rd) m_axis_tvalid <= 1'b1;
      else if (m_axis_tready) m_axis_tvalid <= 1'b0;
    end
  end
endmodule
`default_nettype wire
