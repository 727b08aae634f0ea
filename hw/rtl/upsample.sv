`default_nettype none
// Nearest upsampling by SH x SW of an (H, W, C) stream at P lanes (bb::upsample2d, the
// Resize op with integer scales): every pixel repeated SW times along its row, every row SH
// times; N = C/P beats a pixel, RB = W*N beats a row. Two row buffers (2*RB words of P*8
// bits): the writer stores input rows into them in turn, taking a beat whenever its buffer
// is free (the reader has finished that buffer's previous row); the reader emits the SH*SW
// copies of each row, one beat per cycle into the output register, reading a beat of the row
// being written as soon as it is there. So the input is taken as it comes (a producer slower
// than one row per copy block still paces the output, never stalls it further), the output
// runs at one beat per cycle: ii = H*SH*W*SW*C/P; the first output beat leaves 2 cycles after
// the first input beat (written, then read into the output register).
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
  localparam int RB = W * N;
  localparam int NW = N > 1 ? $clog2(N) : 1;
  localparam int XW = W > 1 ? $clog2(W) : 1;
  localparam int YW = H > 1 ? $clog2(H) : 1;
  localparam int RXW = SW > 1 ? $clog2(SW) : 1;
  localparam int RYW = SH > 1 ? $clog2(SH) : 1;
  localparam int AW = $clog2(RB + 1);
  initial begin
    if (P < 1 || C % P != 0) $error("upsample: P=%0d must divide C=%0d", P, C);
    if (SH < 1 || SW < 1) $error("upsample: scales SH=%0d, SW=%0d must be positive", SH, SW);
  end

  logic [P*8-1:0] mem[2 * RB];
  // writer: buffer wsel, next address wa (beats of the row written so far)
  logic wsel;
  logic [AW-1:0] wa;
  logic [1:0] full;  // buffer b holds a whole row the reader has not finished
  logic wfire;
  // reader: buffer rsel, address ra = x*N + cb (base = x*N), copy counters
  logic rsel;
  logic [AW-1:0] ra, base;
  logic [NW-1:0] cb;
  logic [RXW-1:0] rx;
  logic [XW-1:0] x;
  logic [RYW-1:0] ry;
  logic [YW-1:0] y;
  logic avail, rfire, pix_end, row_end, copies_end;

  assign s_axis_tready = !full[wsel];
  assign wfire = s_axis_tvalid && s_axis_tready;
  assign avail = full[rsel] || (wsel == rsel && wa > ra);
  assign rfire = avail && (!m_axis_tvalid || m_axis_tready);
  assign pix_end = cb == NW'(N - 1) && rx == RXW'(SW - 1);
  assign row_end = pix_end && x == XW'(W - 1);
  assign copies_end = row_end && ry == RYW'(SH - 1);

  always_ff @(posedge clk) begin
    if (wfire) mem[{31'b0, wsel} * RB + int'(wa)] <= s_axis_tdata;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wsel <= 1'b0;
      wa <= '0;
      full <= '0;
      rsel <= 1'b0;
      ra <= '0;
      base <= '0;
      cb <= '0;
      rx <= '0;
      x <= '0;
      ry <= '0;
      y <= '0;
      m_axis_tvalid <= 1'b0;
      m_axis_tlast <= 1'b0;
      m_axis_tdata <= '0;
    end else begin
      if (wfire) begin
        if (wa == AW'(RB - 1)) begin
          wa <= '0;
          full[wsel] <= 1'b1;
          wsel <= ~wsel;
        end else begin
          wa <= wa + 1'b1;
        end
      end
      if (rfire) begin
        m_axis_tvalid <= 1'b1;
        m_axis_tdata <= mem[{31'b0, rsel} * RB + int'(ra)];
        m_axis_tlast <= copies_end && y == YW'(H - 1);
        if (cb != NW'(N - 1)) begin
          cb <= cb + 1'b1;
          ra <= ra + 1'b1;
        end else begin
          cb <= '0;
          if (rx != RXW'(SW - 1)) begin
            rx <= rx + 1'b1;
            ra <= base;
          end else begin
            rx <= '0;
            if (x != XW'(W - 1)) begin
              x <= x + 1'b1;
              ra <= ra + 1'b1;
              base <= ra + 1'b1;
            end else begin
              x <= '0;
              ra <= '0;
              base <= '0;
              if (ry != RYW'(SH - 1)) begin
                ry <= ry + 1'b1;
              end else begin
                ry <= '0;
                y <= y == YW'(H - 1) ? '0 : y + 1'b1;
                full[rsel] <= 1'b0;  // the row's copies are out: its buffer is free
                rsel <= ~rsel;
              end
            end
          end
        end
      end else if (m_axis_tready) begin
        m_axis_tvalid <= 1'b0;
      end
    end
  end
endmodule
`default_nettype wire
