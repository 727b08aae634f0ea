`default_nettype none
// Convolution (or dense: H vectors of C values, a 1x1 kernel) whose weights live in a board
// memory, read once per frame through an AXI4 read master (docs/cost-model.md, "Off-chip
// weights"; docs/rtl.md). Schedule:
//   input   : the frame is stored whole (H*W*C/SIMD beats of SIMD lanes; ISLOTS frame slots);
//             padding is not stored, the window read inserts PAD_VAL.
//   compute : for fold n = 0..NF-1 (NF = CO/PE), for every output pixel, SF = K*C/SIMD steps
//             (taps in (ky, kx, c) order, as conv/mvu) reading the frame buffer and row s of
//             weight tile n; requantised as mvu (rq_lane), written to the output frame buffer
//             at pixel*NF + n (OSLOTS frame slots). A fold starts once its tile is loaded,
//             the previous fold is done and, for fold 0, its input frame is complete and an
//             output slot is free (from the cycle of the last output read of the frame OSLOTS
//             before, the frame's first write coming 5 cycles later).
//   weights : axi_read fetches tile n (PE*SIMD*SF bytes at W_BASE + n*PE*SIMD*SF) into one
//             half of a double-buffered tile memory while the other half is computed; a tile
//             is requested the cycle after its half's previous tile was last read (the first
//             two at reset).
//   output  : once a frame's last result is written, it streams pixel-major (per pixel NF
//             beats of PE lanes, tlast on the last), while the next frame computes (OSLOTS = 2;
//             with OSLOTS = 1 the next frame's fold 0 waits for it).
// ISLOTS, OSLOTS (each 1 or 2, independent): frame slots of the input and of the output buffer.
// ISLOTS = 2: the next frame's input is stored while this one computes (from the cycle after
// the last read of the frame two before); ISLOTS = 1: half the input memory, a frame's input is
// accepted from the cycle after the previous frame's last read. OSLOTS = 2: an output slot is
// reused two frames later; OSLOTS = 1: half the output memory, a frame's fold 0 waits for the
// previous frame's output to have left (its last output read, at the latest in the same cycle).
// Both 2: three consecutive frames overlap.
// Cycles (first input beat at 0, input every cycle, memory latency L from a burst's address
// handshake to its first beat, then a beat every P cycles; NBT = tile beats, Cf = Ho*Wo*SF):
//   fold n's first read S_n = max(E_{n-1} + 1, tile ready), its last E_n = S_n + Cf - 1;
//   tile t ready: its last beat D + 1, D = max(E_{t-2} + 1 + L, D_{t-1} + P) + (NBT-1)*P;
//   a later frame's fold 0 also waits for its last input beat + 1 and its output slot;
//   a result is written 5 cycles after its last read; frame 0's last output beat leaves
//   E_last + 6 + Ho*Wo*NF (model: bbgrap_hls/model/offchip.py offchip_mvu, _schedule).
// Weight image: word a = n*SF + s of PE*SIMD int8, bank i lane j at byte i*SIMD + j (the mvu
// ROM layout), words back to back from W_BASE. Constraints: SIMD | C, PE | CO, DATA_W a power
// of two, DATA_W/8 and PE*SIMD one a multiple of the other, the tile a whole number of beats.
// B_FILE, RQ_FILE: as mvu. PACK = 2: output lanes 2i and 2i+1 share one DSP48E2 per input lane
// (mac2.sv, as mvu's PACK = 2; an odd PE's last lane alone); PACK = 1: one multiplier per
// product. The same cycles, memories and results either way.
module conv_offchip #(
    parameter int C       = 4,
    parameter int CO      = 8,
    parameter int SIMD    = 2,
    parameter int PE      = 4,
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
    parameter     B_FILE  = "",
    parameter     RQ_FILE = "",
    parameter int RQ_ZP   = 0,     // the requantisers' zero point and clamp, one for all channels
    parameter int RQ_LO   = -128,
    parameter int RQ_HI   = 127,
    parameter int DATA_W  = 128,
    parameter int ADDR_W  = 32,
    parameter logic [63:0] W_BASE = 0,
    parameter int ISLOTS  = 2,   // frame slots of the input buffer: 1 or 2
    parameter int OSLOTS  = 2,   // frame slots of the output buffer: 1 or 2
    parameter int PACK    = 1    // 2: two products per DSP48E2 (mac2.sv); 1: one
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
    output logic [PE*8-1:0]     m_axis_tdata,
    output logic                m_axis_tlast,
    output logic [ADDR_W-1:0]   m_axi_araddr,
    output logic [7:0]          m_axi_arlen,
    output logic [2:0]          m_axi_arsize,
    output logic [1:0]          m_axi_arburst,
    output logic                m_axi_arvalid,
    input  wire                 m_axi_arready,
    input  wire  [DATA_W-1:0]   m_axi_rdata,
    input  wire  [1:0]          m_axi_rresp,
    input  wire                 m_axi_rlast,
    input  wire                 m_axi_rvalid,
    output logic                m_axi_rready
);
  localparam int CG = C / SIMD;
  localparam int KHE = (KH - 1) * DH + 1;
  localparam int KWE = (KW - 1) * DW + 1;
  localparam int HO = (H + PT + PB - KHE) / SH + 1;
  localparam int WO = (W + PL + PR - KWE) / SW + 1;
  localparam int SF = KH * KW * CG;
  localparam int NF = CO / PE;
  localparam int IB = H * W * CG;            // input beats per frame
  localparam int OB = HO * WO * NF;          // output beats per frame
  localparam int WB = PE * SIMD;             // bytes of a weight word
  localparam int DB = DATA_W / 8;            // bytes of an AXI beat
  localparam int RB = WB > DB ? WB : DB;     // bytes of a tile-memory row
  localparam int WPR = RB / WB;              // words per row
  localparam int TR = SF * WB / RB;          // rows per tile
  localparam int NBT = SF * WB / DB;         // beats per tile
  localparam int IAW = ISLOTS * IB > 1 ? $clog2(ISLOTS * IB) : 1;
  localparam int OAW = OSLOTS * OB > 1 ? $clog2(OSLOTS * OB) : 1;
  localparam int TAW = $clog2(2 * TR);
  localparam int NW = NF > 1 ? $clog2(NF) : 1;
  localparam int XW = $clog2(HO > WO ? HO + 1 : WO + 1);
  localparam int KW_ = $clog2((KH > KW ? KH : KW) + 1);
  localparam int GW = CG > 1 ? $clog2(CG) : 1;
  localparam int RW = TR > 1 ? $clog2(TR) : 1;
  localparam int WW = WPR > 1 ? $clog2(WPR) : 1;
  localparam int BW = $clog2(IB + 1);
  localparam int QW = $clog2(OB + 1);

  initial begin
    if (SIMD < 1 || C % SIMD != 0) $error("conv_offchip: SIMD=%0d must divide C=%0d", SIMD, C);
    if (PE < 1 || CO % PE != 0) $error("conv_offchip: PE=%0d must divide CO=%0d", PE, CO);
    if (RB % WB != 0 || RB % DB != 0)
      $error("conv_offchip: DATA_W/8=%0d and PE*SIMD=%0d must divide one another", DB, WB);
    if ((SF * WB) % DB != 0)
      $error("conv_offchip: a weight tile (%0d bytes) must be whole %0d-byte beats", SF * WB, DB);
    if (HO < 1 || WO < 1) $error("conv_offchip: kernel larger than the padded input");
    if (ISLOTS != 1 && ISLOTS != 2) $error("conv_offchip: ISLOTS=%0d must be 1 or 2", ISLOTS);
    if (OSLOTS != 1 && OSLOTS != 2) $error("conv_offchip: OSLOTS=%0d must be 1 or 2", OSLOTS);
    if (PACK != 1 && PACK != 2) $error("conv_offchip: PACK=%0d must be 1 or 2", PACK);
  end

  /* verilator lint_off UNDRIVEN */  // ROMs: filled by $readmemh only
  logic [PE*32-1:0] bmem[NF];
  logic [PE*32-1:0] rqmem[NF];
  /* verilator lint_on UNDRIVEN */
  generate
    if (B_FILE != "") begin : g_b
      initial $readmemh(B_FILE, bmem);
    end
    if (RQ_FILE != "") begin : g_rq
      initial $readmemh(RQ_FILE, rqmem);
    end
  endgenerate

  logic [SIMD*8-1:0] ibuf[ISLOTS*IB];  // input frame slots
  logic [RB*8-1:0] tmem[2*TR];        // two weight tiles
  logic [PE*8-1:0] obuf[OSLOTS*OB];    // output frame slots

  // ---- counters shared between the stages (frames, tiles) ----------------------------------
  logic [1:0] in_used;   // input slots being written or not yet fully computed
  logic [1:0] in_done;   // complete input frames whose compute has not started
  logic [1:0] t_held;    // tile halves requested and not yet fully computed
  logic [1:0] t_ready;   // loaded tiles whose compute has not started
  logic [1:0] o_used;    // output slots being computed or not yet fully streamed
  logic [1:0] o_done;    // complete output frames not yet fully streamed

  // ---- input writer ------------------------------------------------------------------------
  logic in_fire, in_end;
  logic in_slot;
  logic [BW-1:0] in_cnt;
  assign s_axis_tready = in_cnt != '0 || in_used != 2'(ISLOTS);
  assign in_fire = s_axis_tvalid && s_axis_tready;
  assign in_end = in_fire && in_cnt == BW'(IB - 1);

  always_ff @(posedge clk) begin
    if (in_fire) ibuf[IAW'(in_slot ? IB : 0) + IAW'(in_cnt)] <= s_axis_tdata;
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      in_cnt <= '0;
      in_slot <= 1'b0;
    end else if (in_fire) begin
      in_cnt <= in_end ? '0 : in_cnt + 1'b1;
      if (in_end && ISLOTS == 2) in_slot <= !in_slot;
    end
  end

  // ---- weight reader and tile memory -------------------------------------------------------
  logic tile_start, row_valid, row_last;
  logic [RB*8-1:0] row_data;
  logic wr_half;
  logic [RW-1:0] wr_row;

  axi_read #(.DATA_W(DATA_W), .ADDR_W(ADDR_W), .BASE(W_BASE), .TILE_BEATS(NBT), .TILES(NF),
             .ROW_BEATS(RB / DB)) reader (
      .clk(clk), .rst(rst), .free(t_held != 2'd2), .tile_start(tile_start),
      .m_axi_araddr(m_axi_araddr), .m_axi_arlen(m_axi_arlen), .m_axi_arsize(m_axi_arsize),
      .m_axi_arburst(m_axi_arburst), .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
      .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp), .m_axi_rlast(m_axi_rlast),
      .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready), .row_valid(row_valid),
      .row_last(row_last), .row_data(row_data)
  );

  always_ff @(posedge clk) begin
    if (row_valid) tmem[TAW'(wr_half ? TR : 0) + TAW'(wr_row)] <= row_data;
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      wr_half <= 1'b0;
      wr_row <= '0;
    end else if (row_valid) begin
      wr_row <= row_last ? '0 : wr_row + 1'b1;
      if (row_last) wr_half <= !wr_half;
    end
  end

  // ---- compute, stage 0: counters and reads ------------------------------------------------
  logic rd, rd_end, o_slot;  // output streamer (below)
  logic [QW-1:0] o_cnt;
  logic busy, start, fire, step_last, pix_last, tile_end, frame_end;
  logic [GW-1:0] g;
  logic [KW_-1:0] kx, ky;
  logic [XW-1:0] ox, oy;
  logic [NW-1:0] n;
  logic [RW-1:0] trow;
  logic [WW-1:0] tword;
  logic c_half, c_islot, c_oslot;
  logic [OAW-1:0] opix;  // pixel*NF of the current output pixel (slot base excluded)
  logic in_win;
  logic [IAW-1:0] iaddr;

  // an output slot is free from the cycle of its last read (the frame's first write comes 5 later)
  assign start = !busy && t_ready != 2'd0 && (n != '0 || (in_done != 2'd0 && (o_used != 2'(OSLOTS) || rd_end)));
  assign fire = busy || start;
  assign step_last = 32'(g) == CG - 1 && 32'(kx) == KW - 1 && 32'(ky) == KH - 1;
  assign pix_last = 32'(ox) == WO - 1 && 32'(oy) == HO - 1;
  assign tile_end = fire && step_last && pix_last;
  assign frame_end = tile_end && 32'(n) == NF - 1;

  always_comb begin
    int iy, ix;
    iy = 32'(oy) * SH + 32'(ky) * DH - PT;
    ix = 32'(ox) * SW + 32'(kx) * DW - PL;
    in_win = iy >= 0 && iy < H && ix >= 0 && ix < W;
    iaddr = in_win ? IAW'((c_islot ? IB : 0) + (iy * W + ix) * CG + 32'(g)) : '0;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0;
      g <= '0;
      kx <= '0;
      ky <= '0;
      ox <= '0;
      oy <= '0;
      n <= '0;
      trow <= '0;
      tword <= '0;
      opix <= '0;
      c_half <= 1'b0;
      c_islot <= 1'b0;
      c_oslot <= 1'b0;
    end else if (fire) begin
      busy <= !tile_end;
      // step: channel group, then kx, then ky; the weight row/word follow the step
      if (32'(g) != CG - 1) g <= g + 1'b1;
      else begin
        g <= '0;
        if (32'(kx) != KW - 1) kx <= kx + 1'b1;
        else begin
          kx <= '0;
          ky <= 32'(ky) == KH - 1 ? '0 : ky + 1'b1;
        end
      end
      if (step_last) begin
        trow <= '0;
        tword <= '0;
      end else if (32'(tword) == WPR - 1) begin
        tword <= '0;
        trow <= trow + 1'b1;
      end else begin
        tword <= tword + 1'b1;
      end
      if (step_last) begin
        if (32'(ox) != WO - 1) ox <= ox + 1'b1;
        else begin
          ox <= '0;
          oy <= pix_last ? '0 : oy + 1'b1;
        end
        opix <= pix_last ? '0 : opix + OAW'(NF);
      end
      if (tile_end) begin
        c_half <= !c_half;
        n <= frame_end ? '0 : n + 1'b1;
      end
      if (frame_end && ISLOTS == 2) c_islot <= !c_islot;
      if (frame_end && OSLOTS == 2) c_oslot <= !c_oslot;
    end
  end

  // ---- stage 1: frame buffer and tile reads ---------------------------------------------------
  logic v1, pad1, first1, last1, olast1;
  logic [SIMD*8-1:0] xq1;
  logic [RB*8-1:0] wrow1;
  logic [WW-1:0] wsel1;
  logic [NW-1:0] n1;
  logic [OAW-1:0] oaddr1;

  always_ff @(posedge clk) begin
    xq1 <= ibuf[iaddr];
    wrow1 <= tmem[TAW'(c_half ? TR : 0) + TAW'(trow)];
    wsel1 <= tword;
    pad1 <= !in_win;
    first1 <= 32'(g) == 0 && 32'(kx) == 0 && 32'(ky) == 0;
    last1 <= step_last;
    olast1 <= frame_end;
    n1 <= n;
    oaddr1 <= OAW'(c_oslot ? OB : 0) + opix + OAW'(n);
  end

  // ---- stage 2: products ----------------------------------------------------------------------
  logic [SIMD*8-1:0] x1;
  logic [WB*8-1:0] w1;
  logic signed [15:0] prod2[PE][SIMD];
  logic [PE*32-1:0] bias2;
  logic v2, first2, last2, olast2;
  logic [NW-1:0] n2;
  logic [OAW-1:0] oaddr2;
  assign x1 = pad1 ? {SIMD{8'(PAD_VAL)}} : xq1;
  assign w1 = wrow1[32'(wsel1)*WB*8+:WB*8];

  generate
    if (PACK == 2) begin : g_pack
      // lanes 2i (w_lo) and 2i+1 (w_hi): one mac2 (one DSP48E2) per pair and input lane
      for (genvar i = 0; i < PE / 2; i++) begin : g_pair
        for (genvar s = 0; s < SIMD; s++) begin : g_s
          mac2 m (
              .clk (clk),
              .en  (1'b1),
              .x   (x1[8*s+:8]),
              .w_hi(w1[8*((2*i+1)*SIMD+s)+:8]),
              .w_lo(w1[8*(2*i*SIMD+s)+:8]),
              .p_hi(prod2[2*i+1][s]),
              .p_lo(prod2[2*i][s])
          );
        end
      end
      if (PE % 2 == 1) begin : g_odd  // the last lane alone
        always_ff @(posedge clk)
          for (int s = 0; s < SIMD; s++)
            prod2[PE-1][s] <= signed'(x1[8*s+:8]) * signed'(w1[8*((PE-1)*SIMD+s)+:8]);
      end
    end else begin : g_plain
      always_ff @(posedge clk)
        for (int p = 0; p < PE; p++)
          for (int s = 0; s < SIMD; s++)
            prod2[p][s] <= signed'(x1[8*s+:8]) * signed'(w1[8*(p*SIMD+s)+:8]);
    end
  endgenerate

  always_ff @(posedge clk) begin
    bias2 <= bmem[n1];
    first2 <= first1;
    last2 <= last1;
    olast2 <= olast1;
    n2 <= n1;
    oaddr2 <= oaddr1;
  end

  // ---- stage 3: accumulate --------------------------------------------------------------------
  logic signed [31:0] acc[PE];
  logic signed [31:0] acc_next[PE];
  logic [PE*32-1:0] acc3;
  logic [PE*32-1:0] rq3;
  logic v3, olast3;
  logic [OAW-1:0] oaddr3;

  always_comb begin
    for (int p = 0; p < PE; p++) begin
      acc_next[p] = first2 ? signed'(bias2[32*p+:32]) : acc[p];
      for (int s = 0; s < SIMD; s++) acc_next[p] = acc_next[p] + 32'(prod2[p][s]);
    end
  end

  always_ff @(posedge clk) begin
    if (v2) for (int p = 0; p < PE; p++) acc[p] <= acc_next[p];
    for (int p = 0; p < PE; p++) acc3[32*p+:32] <= acc_next[p];
    rq3 <= rqmem[n2];
    olast3 <= olast2;
    oaddr3 <= oaddr2;
  end

  // ---- stages 4-5: requantise; write the output frame buffer -------------------------------------
  logic v4, v5, olast4, olast5;
  logic [OAW-1:0] oaddr4, oaddr5;
  logic [PE*8-1:0] y5;

  always_ff @(posedge clk) begin
    if (rst) begin
      v1 <= 1'b0;
      v2 <= 1'b0;
      v3 <= 1'b0;
      v4 <= 1'b0;
      v5 <= 1'b0;
    end else begin
      v1 <= fire;
      v2 <= v1;
      v3 <= v2 && last2;
      v4 <= v3;
      v5 <= v4;
    end
  end
  always_ff @(posedge clk) begin
    olast4 <= olast3;
    olast5 <= olast4;
    oaddr4 <= oaddr3;
    oaddr5 <= oaddr4;
  end

  for (genvar p = 0; p < PE; p++) begin : g_rqlane
    rq_lane lane (
        .clk(clk),
        .en (1'b1),
        .acc(acc3[32*p+:32]),
        .rq ({8'd0, rq3[32*p+:32], 8'(RQ_ZP), 8'(RQ_LO), 8'(RQ_HI)}),
        .y  (y5[8*p+:8])
    );
  end

  logic o_write_end;
  assign o_write_end = v5 && olast5;
  always_ff @(posedge clk) begin
    if (v5) obuf[oaddr5] <= y5;
  end

  // ---- output streamer ------------------------------------------------------------------------
  assign rd = o_done != 2'd0 && (!m_axis_tvalid || m_axis_tready);
  assign rd_end = rd && o_cnt == QW'(OB - 1);

  always_ff @(posedge clk) begin
    if (rd) begin
      m_axis_tdata <= obuf[OAW'(o_slot ? OB : 0) + OAW'(o_cnt)];
      m_axis_tlast <= o_cnt == QW'(OB - 1);
    end
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      o_cnt <= '0;
      o_slot <= 1'b0;
      m_axis_tvalid <= 1'b0;
    end else begin
      if (rd) begin
        o_cnt <= rd_end ? '0 : o_cnt + 1'b1;
        if (rd_end && OSLOTS == 2) o_slot <= !o_slot;
        m_axis_tvalid <= 1'b1;
      end else if (m_axis_tready) m_axis_tvalid <= 1'b0;
    end
  end

  // ---- slot and tile accounting -----------------------------------------------------------------
  always_ff @(posedge clk) begin
    if (rst) begin
      in_used <= '0;
      in_done <= '0;
      t_held <= '0;
      t_ready <= '0;
      o_used <= '0;
      o_done <= '0;
    end else begin
      in_used <= in_used + 2'(in_fire && in_cnt == '0) - 2'(frame_end);
      in_done <= in_done + 2'(in_end) - 2'(start && n == '0);
      t_held <= t_held + 2'(tile_start) - 2'(tile_end);
      t_ready <= t_ready + 2'(row_last) - 2'(start);
      o_used <= o_used + 2'(start && n == '0) - 2'(rd_end);
      o_done <= o_done + 2'(o_write_end) - 2'(rd_end);
    end
  end
endmodule
`default_nettype wire
