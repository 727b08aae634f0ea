`default_nettype none
// Nearest upsampling by SH x SW of an (H, W, C) stream at P lanes (bb::upsample2d, the
// Resize op with integer scales): every pixel repeated SW times along its row, every row SH
// times; N = C/P beats a pixel. One output beat per cycle: in the first copy of a row, each
// pixel's first copy passes the input straight through (no cycle of delay) while storing it
// in the row memory (W*N words of P*8 bits); every other copy is read from that memory and
// the input waits meanwhile. ii = H*SH*W*SW*C/P, the output's rate; tlast on the frame's
// last beat.
module upsample #(
    parameter int C  = 4,
    parameter int P  = 2,
    parameter int H  = 2,
    parameter int W  = 2,
    parameter int SH = 2,
    parameter int SW = 2
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire  [P*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire              s_axis_tlast,  // the counters know the frame's end
    /* verilator lint_on UNUSEDSIGNAL */
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic [P*8-1:0]   m_axis_tdata,
    output logic             m_axis_tlast
);
  localparam int N = C / P;
  localparam int NW = N > 1 ? $clog2(N) : 1;
  localparam int XW = W > 1 ? $clog2(W) : 1;
  localparam int YW = H > 1 ? $clog2(H) : 1;
  localparam int RXW = SW > 1 ? $clog2(SW) : 1;
  localparam int RYW = SH > 1 ? $clog2(SH) : 1;
  localparam int AW = W * N > 1 ? $clog2(W * N) : 1;
  initial begin
    if (P < 1 || C % P != 0) $error("upsample: P=%0d must divide C=%0d", P, C);
    if (SH < 1 || SW < 1) $error("upsample: scales SH=%0d, SW=%0d must be positive", SH, SW);
  end

  logic [P*8-1:0] mem[W * N];
  logic [NW-1:0] cb;
  logic [RXW-1:0] rx;
  logic [XW-1:0] x;
  logic [RYW-1:0] ry;
  logic [YW-1:0] y;
  logic [AW-1:0] a, base;  // a = x*N + cb, base = x*N
  logic pass, fire;

  assign pass = rx == '0 && ry == '0;
  assign m_axis_tvalid = pass ? s_axis_tvalid : 1'b1;
  assign m_axis_tdata = pass ? s_axis_tdata : mem[a];
  assign m_axis_tlast = y == YW'(H - 1) && ry == RYW'(SH - 1) && x == XW'(W - 1) && rx == RXW'(SW - 1)
                     && cb == NW'(N - 1);
  assign s_axis_tready = pass && m_axis_tready;
  assign fire = m_axis_tvalid && m_axis_tready;

  always_ff @(posedge clk) begin
    if (fire && pass) mem[a] <= s_axis_tdata;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      cb <= '0;
      rx <= '0;
      x <= '0;
      ry <= '0;
      y <= '0;
      a <= '0;
      base <= '0;
    end else if (fire) begin
      if (cb != NW'(N - 1)) begin
        cb <= cb + 1'b1;
        a <= a + 1'b1;
      end else begin
        cb <= '0;
        if (rx != RXW'(SW - 1)) begin
          rx <= rx + 1'b1;
          a <= base;
        end else begin
          rx <= '0;
          if (x != XW'(W - 1)) begin
            x <= x + 1'b1;
            a <= a + 1'b1;
            base <= a + 1'b1;
          end else begin
            x <= '0;
            a <= '0;
            base <= '0;
            if (ry != RYW'(SH - 1)) begin
              ry <= ry + 1'b1;
            end else begin
              ry <= '0;
              y <= y == YW'(H - 1) ? '0 : y + 1'b1;
            end
          end
        end
      end
    end
  end
endmodule
`default_nettype wire
