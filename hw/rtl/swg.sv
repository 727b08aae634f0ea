`default_nettype none
// Sliding window generator. Input: H x W x C frames in NHWC order, SIMD lanes per beat.
// Output: for each output pixel (oy, ox) in raster order, for each kernel tap (ky, kx),
// the C/SIMD beats of input pixel (oy*SH + ky*DH, ox*SW + kx*DW) of the padded image:
// the column order k*C + c that the mvu's weights use. Padding inserts PAD_VAL (the
// input zero point for conv, -128 for max pooling).
// A writer fills a circular buffer of ROWS padded rows, one beat per cycle, padded beats
// included (so it takes Hp*Wp*C/SIMD cycles per frame); a reader emits one beat per cycle
// once the rows of an output row are present. The default ROWS = max(TAIL + KHE, KHE + SH)
// (TAIL = Hp - (Ho-1)*SH, the rows released after a frame's last output row) lets the
// writer fill the next frame's first window while the last output row is read, so
// ii = max(Hp*Wp*C/SIMD, Ho*Wo*K*C/SIMD) exactly (docs/hardware.md), across frames too.
// Parallel window: J taps per output beat (J | KH*KW), lane block i = tap tb + i, read
// through J read ports of the row memory; output SIMD*J lanes.
module swg #(
    parameter int C       = 4,
    parameter int SIMD    = 2,
    parameter int H       = 4,
    parameter int W       = 4,
    parameter int KH      = 3,
    parameter int KW      = 3,
    parameter int SH      = 1,
    parameter int SW      = 1,
    parameter int DH      = 1,
    parameter int DW      = 1,
    parameter int PT      = 1,
    parameter int PL      = 1,
    parameter int PB      = 1,
    parameter int PR      = 1,
    parameter int PAD_VAL = 0,
    parameter int J       = 1,
    // the rows of the last output row, the unused bottom rows (TAIL - KHE) and the next
    // frame's first window: max(TAIL + KHE, KHE + SH)
    parameter int ROWS    = ((H + PT + PB - (KH - 1) * DH - 1) % SH + (KH - 1) * DH + 1 > SH
                             ? (H + PT + PB - (KH - 1) * DH - 1) % SH + 2 * ((KH - 1) * DH + 1)
                             : (KH - 1) * DH + 1 + SH)
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 s_axis_tvalid,
    output logic                s_axis_tready,
    input  wire  [SIMD*8-1:0]   s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                 s_axis_tlast,  // frames are counted, not marked
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                m_axis_tvalid,
    input  wire                 m_axis_tready,
    output logic [J*SIMD*8-1:0] m_axis_tdata,
    output logic                m_axis_tlast
);
  localparam int CG = C / SIMD;
  localparam int HP = H + PT + PB;
  localparam int WP = W + PL + PR;
  localparam int KHE = (KH - 1) * DH + 1;
  localparam int KWE = (KW - 1) * DW + 1;
  localparam int HO = (HP - KHE) / SH + 1;
  localparam int WO = (WP - KWE) / SW + 1;
  localparam int TAIL = HP - (HO - 1) * SH;  // rows released after the last output row
  localparam int DEPTH = ROWS * WP * CG;
  localparam int AW = $clog2(DEPTH);
  localparam int RW = $clog2(ROWS + 1);
  localparam int XW = $clog2((HP > WP ? HP : WP) + 1);
  localparam int GW = CG > 1 ? $clog2(CG) : 1;
  localparam int K = KH * KW;
  localparam int TW = $clog2(K + 1);

  initial begin
    if (SIMD < 1 || C % SIMD != 0) $error("swg: SIMD=%0d must divide C=%0d", SIMD, C);
    if (HP < KHE || WP < KWE) $error("swg: kernel %0dx%0d larger than padded input %0dx%0d", KHE, KWE, HP, WP);
    if (ROWS < KHE + 1) $error("swg: ROWS=%0d must exceed the window height %0d", ROWS, KHE);
    if (J < 1 || K % J != 0) $error("swg: J=%0d must divide the kernel size %0d", J, K);
  end

  // block RAM from 1,024 bits and 65 words on, LUTRAM below, as the cost model counts a
  // line buffer (`memory`); left to itself Yosys takes LUTRAM for a few hundred words
  /* verilator lint_off UNUSEDPARAM */  // read by synthesis only (the ram_style attribute)
  localparam MEM_STYLE = DEPTH > 64 && DEPTH * SIMD * 8 >= 1024 ? "block" : "distributed";
  /* verilator lint_on UNUSEDPARAM */
  logic signed [15:0] wabs, rbase;  // absolute row counters (wrap harmlessly)
  logic signed [15:0] ahead;

  // ---- writer ----------------------------------------------------------------------------
  logic [XW-1:0] wr_r, wr_c;
  logic [GW-1:0] wr_g;
  logic [AW-1:0] wa;
  logic pad, wr_ok, wr_fire;
  assign ahead = wabs - rbase;
  assign pad = int'(wr_r) < PT || int'(wr_r) >= PT + H || int'(wr_c) < PL || int'(wr_c) >= PL + W;
  assign wr_ok = ahead < 16'(ROWS);
  assign s_axis_tready = wr_ok && !pad;
  assign wr_fire = wr_ok && (pad || s_axis_tvalid);


  always_ff @(posedge clk) begin
    if (rst) begin
      wr_r <= '0;
      wr_c <= '0;
      wr_g <= '0;
      wa <= '0;
      wabs <= '0;
    end else if (wr_fire) begin
      wa <= wa == AW'(DEPTH - 1) ? '0 : wa + 1'b1;
      if (wr_g != GW'(CG - 1)) wr_g <= wr_g + 1'b1;
      else begin
        wr_g <= '0;
        if (wr_c != XW'(WP - 1)) wr_c <= wr_c + 1'b1;
        else begin
          wr_c <= '0;
          wabs <= wabs + 1'b1;
          wr_r <= wr_r == XW'(HP - 1) ? '0 : wr_r + 1'b1;
        end
      end
    end
  end

  // ---- reader ----------------------------------------------------------------------------
  // Tap t = ky*KW + kx of the window sits ROFF[t] rows below and COFF[t] columns right of
  // the window's corner; a beat holds taps tb .. tb+J-1 (lane block i = tap tb+i).
  function automatic logic [K*XW-1:0] offsets(input logic rows);
    offsets = '0;
    for (int t = 0; t < K; t++) offsets[t*XW+:XW] = XW'(rows ? (t / KW) * DH : (t % KW) * DW);
  endfunction
  localparam logic [K*XW-1:0] ROFF = offsets(1'b1);
  localparam logic [K*XW-1:0] COFF = offsets(1'b0);

  logic [XW-1:0] oy, ox;
  logic [TW-1:0] tb;     // first tap of the beat
  logic [GW-1:0] rg;
  logic [RW-1:0] bslot;  // slot of row oy*SH
  logic [XW-1:0] col0;   // ox*SW
  logic rd_ok, rd_fire, end_g, end_k, end_ox, end_oy;
  logic [AW-1:0] ra[J];

  assign rd_ok = wabs - rbase >= 16'(KHE);
  assign rd_fire = rd_ok && (!m_axis_tvalid || m_axis_tready);
  assign end_g = rg == GW'(CG - 1);
  assign end_k = end_g && tb == TW'(K - J);
  assign end_ox = end_k && ox == XW'(WO - 1);
  assign end_oy = end_ox && oy == XW'(HO - 1);

  function automatic logic [RW-1:0] slot_add(input logic [RW-1:0] s, input int n);
    int t;
    t = 32'(s) + n;
    slot_add = RW'(t >= ROWS ? t - ROWS : t);
  endfunction

  // x*c (mod 2^32) for a constant c by shifts and adds: Yosys maps a product by a constant
  // to a DSP48E2 once it is wide enough (LeNet's 2x2 pool, CG = 6: one DSP), and the cost
  // model budgets none for a window generator
  function automatic logic [31:0] times(input logic [31:0] x, input logic [31:0] c);
    times = '0;
    for (int b = 0; b < 32; b++) if (c[b]) times = times + (x << b);
  endfunction

  always_comb begin
    for (int i = 0; i < J; i++) begin
      ra[i] = AW'(times(times(32'(slot_add(bslot, 32'(ROFF[(32'(tb) + i)*XW+:XW]))), 32'(WP))
                        + 32'(col0) + 32'(COFF[(32'(tb) + i)*XW+:XW]), 32'(CG)) + 32'(rg));
    end
  end

  // One copy of the row memory per read port, each written alike (the model's `j` copies):
  // one memory with J read ports made Yosys 0.70 abort in memory_libmap (DS-CNN's stem conv,
  // J = 40), and a block RAM has two ports anyway.
  for (genvar i = 0; i < J; i++) begin : g_port
    (* ram_style = MEM_STYLE *)
    logic [SIMD*8-1:0] mem[DEPTH];
    logic [SIMD*8-1:0] q;
    always_ff @(posedge clk) begin
      if (wr_fire) mem[wa] <= pad ? {SIMD{8'(PAD_VAL)}} : s_axis_tdata;
      if (rd_fire) q <= mem[ra[i]];
    end
    assign m_axis_tdata[i*SIMD*8+:SIMD*8] = q;
  end

  always_ff @(posedge clk) begin
    if (rd_fire) m_axis_tlast <= end_oy;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      oy <= '0;
      ox <= '0;
      tb <= '0;
      rg <= '0;
      bslot <= '0;
      col0 <= '0;
      rbase <= '0;
      m_axis_tvalid <= 1'b0;
    end else begin
      if (rd_fire) m_axis_tvalid <= 1'b1;
      else if (m_axis_tready) m_axis_tvalid <= 1'b0;
      if (rd_fire) begin
        if (!end_g) rg <= rg + 1'b1;
        else begin
          rg <= '0;
          if (!end_k) tb <= tb + TW'(J);
          else begin
            tb <= '0;
            if (!end_ox) begin
              ox <= ox + 1'b1;
              col0 <= col0 + XW'(SW);
            end else begin
              ox <= '0;
              col0 <= '0;
              if (!end_oy) begin
                oy <= oy + 1'b1;
                bslot <= slot_add(bslot, SH);
                rbase <= rbase + 16'(SH);
              end else begin
                oy <= '0;
                bslot <= slot_add(bslot, TAIL);
                rbase <= rbase + 16'(TAIL);
              end
            end
          end
        end
      end
    end
  end
endmodule
`default_nettype wire
