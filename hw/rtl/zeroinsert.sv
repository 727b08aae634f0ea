`default_nettype none
// Zero insertion of an (H, W, C) stream at P lanes (bb::zeroinsert2d, the upsampling half of
// a lowered ConvTranspose): SH-1 zero-point pixels between neighbouring input pixels of a
// column, SW-1 of a row, and PT/PL/PB/PR zero-point rows/columns around the result. Output
// (PT + (H-1)*SH + 1 + PB) x (PL + (W-1)*SW + 1 + PR) pixels of N = C/P beats. No memory:
// the output register takes an input beat where an input pixel lands, else the zero point
// ZP on every lane; one output beat per cycle, so ii = the output beats, and the first
// output beat leaves one cycle after the frame's first input beat is offered (leading
// padding waits for it, so the output never runs ahead of its input frame).
module zeroinsert #(
    parameter int C  = 4,
    parameter int P  = 2,
    parameter int H  = 2,
    parameter int W  = 2,
    parameter int SH = 2,
    parameter int SW = 2,
    parameter int PT = 0,
    parameter int PL = 0,
    parameter int PB = 0,
    parameter int PR = 0,
    parameter int ZP = 0
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
  localparam int HI = (H - 1) * SH + 1;  // rows spanned by the input pixels
  localparam int WI = (W - 1) * SW + 1;
  localparam int HO = PT + HI + PB;
  localparam int WO = PL + WI + PR;
  localparam int NW = N > 1 ? $clog2(N) : 1;
  localparam int XW = $clog2(WO + 1);
  localparam int YW = $clog2(HO + 1);
  localparam int RXW = SW > 1 ? $clog2(SW) : 1;
  localparam int RYW = SH > 1 ? $clog2(SH) : 1;
  initial begin
    if (P < 1 || C % P != 0) $error("zeroinsert: P=%0d must divide C=%0d", P, C);
    if (SH < 1 || SW < 1) $error("zeroinsert: factors SH=%0d, SW=%0d must be positive", SH, SW);
    if (PT < 0 || PL < 0 || PB < 0 || PR < 0) $error("zeroinsert: pads must be non-negative");
    if (ZP < -128 || ZP > 127) $error("zeroinsert: ZP=%0d is no int8", ZP);
  end

  // output pixel (oy, ox), beat cb; ry/rx: the phase (oy - PT) mod SH, (ox - PL) mod SW
  logic [NW-1:0] cb;
  logic [XW-1:0] ox;
  logic [YW-1:0] oy;
  logic [RXW-1:0] rx;
  logic [RYW-1:0] ry;
  logic past_l, past_t, col_in, row_in, real_px, start, free, fire, pix_end, row_end;

  // ox >= PL and oy >= PT (a comparison with 0 would be constant: lint)
  if (PL == 0) begin : g_l0
    assign past_l = 1'b1;
  end else begin : g_l
    assign past_l = ox >= XW'(PL);
  end
  if (PT == 0) begin : g_t0
    assign past_t = 1'b1;
  end else begin : g_t
    assign past_t = oy >= YW'(PT);
  end
  assign col_in = past_l && ox < XW'(PL + WI) && rx == '0;
  assign row_in = past_t && oy < YW'(PT + HI) && ry == '0;
  assign real_px = col_in && row_in;
  assign free = !m_axis_tvalid || m_axis_tready;
  // a frame starts when its input does: leading padding waits for the first input beat
  // (offered, not taken), so the output never runs ahead of the input's frame
  assign start = oy == '0 && ox == '0 && cb == '0;
  assign fire = free && (!(real_px || start) || s_axis_tvalid);
  assign s_axis_tready = free && real_px;
  assign pix_end = cb == NW'(N - 1);
  assign row_end = pix_end && ox == XW'(WO - 1);

  always_ff @(posedge clk) begin
    if (rst) begin
      cb <= '0;
      ox <= '0;
      oy <= '0;
      rx <= '0;
      ry <= '0;
      m_axis_tvalid <= 1'b0;
      m_axis_tlast <= 1'b0;
      m_axis_tdata <= '0;
    end else begin
      if (fire) begin
        m_axis_tvalid <= 1'b1;
        m_axis_tdata <= real_px ? s_axis_tdata : {P{8'(ZP)}};
        m_axis_tlast <= row_end && oy == YW'(HO - 1);
        cb <= pix_end ? '0 : cb + 1'b1;
        if (pix_end) begin
          if (past_l) rx <= rx == RXW'(SW - 1) ? '0 : rx + 1'b1;
          if (row_end) begin
            ox <= '0;
            rx <= '0;
            if (past_t) ry <= ry == RYW'(SH - 1) ? '0 : ry + 1'b1;
            if (oy == YW'(HO - 1)) begin
              oy <= '0;
              ry <= '0;
            end else begin
              oy <= oy + 1'b1;
            end
          end else begin
            ox <= ox + 1'b1;
          end
        end
      end else if (m_axis_tready) begin
        m_axis_tvalid <= 1'b0;
      end
    end
  end
endmodule
`default_nettype wire
