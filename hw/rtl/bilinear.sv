`default_nettype none
// Bilinear upsampling of an (H, W, C) stream at P lanes to (HO, WO, C) (bb::bilinear2d, the
// ResizeBilinear op: Resize mode "linear" with integer scales). N = C/P beats a pixel, RB = W*N
// beats a row. The taps come from the tables TY (HO entries) and TX (WO entries) that
// ops/resize_linear.py `taps` computes: entry k = TY[48*k +: 48] = {y0, y1, w1} (16 bits each),
// w0 = 256 - w1, y1 = y0 where w1 = 0, y0 of output row 0 is 0 and y0 grows by at most 1 a row.
// Per lane: y = (wx0*(wy0*a00 + wy1*a10) + wx1*(wy0*a01 + wy1*a11) + 2^15) >>> 16 on the codes
// (docs/numerics.md): weights 9 bits unsigned, products in LUTs.
// A ring of three row buffers (3*RB words of P*8 bits): the writer stores input rows into them
// in turn while its row is at most one past the row y1 the current output row needs (so rows
// y0, y1 are never overwritten); the reader emits an output row once its row y1 is complete,
// one beat per cycle into the output register (four taps read, combined in the same cycle).
// Rows run on across frames: during the last output row of a frame the next frame's row 0 is
// taken. ii = HO*WO*C/P; the first output beat leaves 2 cycles after the last beat of input
// row 0 (written, then read into the output register).
module bilinear #(
    parameter int C  = 4,
    parameter int P  = 2,
    parameter int H  = 2,
    parameter int W  = 2,
    parameter int HO = 4,
    parameter int WO = 4,
    parameter logic [HO*48-1:0] TY = '0,
    parameter logic [WO*48-1:0] TX = '0
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
  localparam int AW = $clog2(RB + 1);
  localparam int XW = $clog2(WO + 1);
  localparam int YW = $clog2(HO + 1);
  localparam int RW = $clog2(H + 3);  // rows relative to the reader's frame: 0 .. H + 1
  localparam int MW = $clog2(3 * RB + 1);
  localparam logic [1:0] HMOD3 = 2'(H % 3);
  initial begin
    if (P < 1 || C % P != 0) $error("bilinear: P=%0d must divide C=%0d", P, C);
  end

  function automatic logic [1:0] inc3(input logic [1:0] s);
    inc3 = s == 2'd2 ? 2'd0 : s + 2'd1;
  endfunction

  function automatic logic [1:0] add3(input logic [1:0] s, input logic [1:0] d);
    logic [2:0] t;
    t = {1'b0, s} + {1'b0, d};
    add3 = t >= 3'd3 ? t[1:0] + 2'd1 : t[1:0];  // t - 3 = t + 1 mod 4 for t in 3..4
  endfunction

  logic [P*8-1:0] mem[3 * RB];
  // writer: slot wslot, address wa, complete rows wdone counted from the reader's frame's row 0
  logic [1:0] wslot;
  logic [AW-1:0] wa;
  logic [RW-1:0] wdone;
  logic wfire, wrow_end;
  // reader: output row oy, pixel ox, beat cb; fslot = slot of the frame's row 0, s0 = of row y0
  logic [YW-1:0] oy;
  logic [XW-1:0] ox;
  logic [NW-1:0] cb;
  logic [1:0] fslot, s0, s1;
  logic [15:0] y0, y1, wy1, x0, x1, wx1, y0n;
  logic [8:0] wy0, wx0;
  logic avail, rfire, pix_end, row_end, frame_end;
  logic [P*8-1:0] t00, t01, t10, t11, y;

  assign y0 = TY[48*int'(oy)+32+:16];
  assign y1 = TY[48*int'(oy)+16+:16];
  assign wy1 = TY[48*int'(oy)+:16];
  assign y0n = TY[48*((int'(oy) + 1) % HO)+32+:16];
  assign x0 = TX[48*int'(ox)+32+:16];
  assign x1 = TX[48*int'(ox)+16+:16];
  assign wx1 = TX[48*int'(ox)+:16];
  assign wy0 = 9'(16'd256 - wy1);
  assign wx0 = 9'(16'd256 - wx1);
  assign s1 = y1 != y0 ? inc3(s0) : s0;

  assign s_axis_tready = int'(wdone) <= int'(y1) + 1;
  assign wfire = s_axis_tvalid && s_axis_tready;
  assign wrow_end = wfire && wa == AW'(RB - 1);
  assign avail = int'(wdone) > int'(y1);
  assign rfire = avail && (!m_axis_tvalid || m_axis_tready);
  assign pix_end = cb == NW'(N - 1);
  assign row_end = pix_end && ox == XW'(WO - 1);
  assign frame_end = row_end && oy == YW'(HO - 1);

  // the four taps: rows y0, y1 (slots s0, s1) at columns x0, x1
  assign t00 = mem[MW'(int'(s0) * RB + int'(x0) * N + int'(cb))];
  assign t01 = mem[MW'(int'(s0) * RB + int'(x1) * N + int'(cb))];
  assign t10 = mem[MW'(int'(s1) * RB + int'(x0) * N + int'(cb))];
  assign t11 = mem[MW'(int'(s1) * RB + int'(x1) * N + int'(cb))];

  always_comb begin
    for (int l = 0; l < P; l++) begin
      logic signed [18:0] v0, v1;
      /* verilator lint_off UNUSEDSIGNAL */
      logic signed [29:0] acc;  // |acc| < 2^24: bits 23:16 are the result
      /* verilator lint_on UNUSEDSIGNAL */
      v0 = 19'($signed({1'b0, wy0}) * $signed(t00[8*l+:8])) + 19'($signed({1'b0, wy1[8:0]}) * $signed(t10[8*l+:8]));
      v1 = 19'($signed({1'b0, wy0}) * $signed(t01[8*l+:8])) + 19'($signed({1'b0, wy1[8:0]}) * $signed(t11[8*l+:8]));
      acc = 30'($signed({1'b0, wx0}) * v0) + 30'($signed({1'b0, wx1[8:0]}) * v1) + 30'sd32768;
      y[8*l+:8] = acc[23:16];
    end
  end

  always_ff @(posedge clk) begin
    if (wfire) mem[MW'(int'(wslot) * RB + int'(wa))] <= s_axis_tdata;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wslot <= '0;
      wa <= '0;
      wdone <= '0;
      oy <= '0;
      ox <= '0;
      cb <= '0;
      fslot <= '0;
      s0 <= '0;
      m_axis_tvalid <= 1'b0;
      m_axis_tlast <= 1'b0;
      m_axis_tdata <= '0;
    end else begin
      if (wfire) begin
        if (wrow_end) begin
          wa <= '0;
          wslot <= inc3(wslot);
        end else begin
          wa <= wa + 1'b1;
        end
      end
      // complete rows: + the row the writer ends, - H when the reader leaves its frame
      wdone <= RW'(int'(wdone) + (wrow_end ? 1 : 0) - (rfire && frame_end ? H : 0));
      if (rfire) begin
        m_axis_tvalid <= 1'b1;
        m_axis_tdata <= y;
        m_axis_tlast <= frame_end;
        if (!pix_end) begin
          cb <= cb + 1'b1;
        end else begin
          cb <= '0;
          if (!row_end) begin
            ox <= ox + 1'b1;
          end else begin
            ox <= '0;
            if (!frame_end) begin
              oy <= oy + 1'b1;
              if (y0n != y0) s0 <= inc3(s0);
            end else begin
              oy <= '0;
              fslot <= add3(fslot, HMOD3);
              s0 <= add3(fslot, HMOD3);
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
