`default_nettype none
// The layer engine (docs/engine.md): one conv/dense unit of PE x SIMD lanes time-shared over
// a program of NL steps (PROG_FILE: engine_image.descriptor_words, 24 words a step in
// engine_image.FIELDS order; a step is a layer or a band of its output rows, "Row bands"),
// feature maps and weights in board memory. Per frame (a `start` pulse in IDLE), for each
// step in turn:
//   desc   : the step's 24 descriptor words are read from the program ROM (one a cycle,
//            registered reads), then two cycles derive its sizes (DERIVE1, DERIVE2).
//   load   : from the cycle after the first RUN cycle the feature port reads the input rows
//            (engine_image.load_runs): one run of ceil((s + H*W*C)/DB) beats if the blocks
//            abut (IN_STRIDE = H*W*PE), else C/PE runs of ceil((s + H*W*PE)/DB) beats, run r
//            from the beat holding FEAT_BASE + IN_BASE + r*IN_STRIDE (s = IN_BASE mod DB, the
//            bytes skipped), into the input buffer as they are in memory (row r holds beat r;
//            byte s + b*BS + p*PE + j is channel b*PE + j of pixel p, BS the runs' bytes a
//            block; a SIMD-byte word of channels is read from its row by a lane multiplexer);
//            every burst is requested back to back, rready stays high.
//   weights: from the same cycle on the weight port fetches the layer's tiles t = 0..NF-1
//            (TILE_BEATS beats at W_BASE + W_BASE' + t*TILE_BEATS*DB) into the two halves of the
//            tile memory in turn, a tile once a half is free (the first two at once); the
//            first PW words of a tile (PE requantiser records, engine_image.tile_layout) are
//            also kept in a per-half register.
//   folds  : fold n starts once its tile is in, the previous fold's reads are done and (fold 0)
//            the whole map is in; it reads SF = KH*KW*C/SIMD steps a pixel over every output
//            pixel (taps in (ky, kx, c) order, padding ZP_IN, the window addresses computed
//            incrementally) and requantises as conv_offchip (5 cycles from a pixel's last read
//            to its PE bytes).
//   store  : results (PE bytes each, fold-major then pixel-major: the blocked output map) are
//            packed DB/PE to a beat into a write queue (engine_image.store_runs): one run from
//            OUT_BASE if OUT_STRIDE is not whole beats (then Ho*Wo*PE: the blocks abut), else
//            (flush) each fold from a new beat, fold n's run at OUT_BASE + n*OUT_STRIDE; a write
//            burst of len = min(BURST, beats to 4 KB, beats left in the run) goes out once len
//            beats are queued (after the step's last result: the rest), AW and W together, one
//            burst at a time. A run's last beat is zero-padded (program() leaves the bytes past
//            a block or map as padding, or the next band writes them), so every beat has full
//            strobes.
//   end    : the cycle after the step's last write response (layer_end); after the last step
//            `done` pulses and the engine idles until the next start.
//   frames : a step of FRAMES = NB > 1 (docs/engine.md, "Batched frames") computes NB frames'
//            maps with each tile: it loads NB inputs (frame f's at IN_BASE + f*FRAME_STRIDE,
//            after frame f-1's in the input buffer, chunk k of every frame's runs before chunk
//            k + 1), and fold n computes frame 0's pixels, then frame 1's, ...; each frame's
//            results start a new beat, the run of (fold n, frame f) at OUT_BASE +
//            n*OUT_STRIDE + f*FRAME_STRIDE (OUT_STRIDE and FRAME_STRIDE multiples of DB). So the
//            weights are read once for NB frames. FRAMES = 1: the step as above.
// Cycles: see bbgrap_hls/model/engine.py (the recurrence this schedule gives, exact).
// Constraints: PE, SIMD and DB = DATA_W/8 powers of two, SIMD | PE | DB; the compute stalls
// if the write queue (WQ beats) is short of room (never in a layer whose writes keep up, the
// model's assumption). IBUF_WORDS: SIMD-byte words of the largest step's input buffer
// (engine_image.in_buffer_bytes / SIMD); TILE_WORDS: PE*SIMD-byte words of the largest tile
// (PW + SF).
// PACK = 1: output lanes 2i and 2i+1 share one DSP48E2 per input lane (mac2.sv, as mvu.sv's
// PACK = 2: the two int8 products of the same input byte in one 27 x 18 multiply, separated
// and corrected in the cycle after it): PE*SIMD/2 product DSPs instead of PE*SIMD, the same
// products, cycles and memories. PACK = 0 (the default): one multiplier per product.
// DESC_IN = 1 (engine_top.sv): no program ROM; a `start` runs one step whose 24 words are on
// `desc` (field i at desc[32*i +: 32], latched at the start), from DERIVE1 the cycle after:
// the step's first RUN cycle is start + 3 (model/engine_top.py CONV_SETUP_IN) instead of
// + 26, then the schedule above; `layer_end` and `done` pulse together at its end. NL must
// be 1, PROG_FILE is unused. DESC_IN = 0 (the default) is the engine as described above, bit
// and cycle for cycle (`desc` unused).
// IBUF_URAM = 1: the input buffer is asked for UltraRAM (URAM288: 72-bit words, 4K deep, a
// registered read as here); TMEM_URAM = n: the tile memory's low min(72n, 8*RB) bits of each
// row are a memory of their own asked for UltraRAM (n URAM288 columns), the rest stays with
// the tool's choice. The same bits, reads and cycles; 0 (the defaults): the tool's choice for
// both (block RAM).
module conv_engine #(
    parameter int PE         = 4,
    parameter int SIMD       = 2,
    parameter int DATA_W     = 64,
    parameter int ADDR_W     = 32,
    parameter int NL         = 1,
    parameter     PROG_FILE  = "",
    parameter int IBUF_WORDS = 64,
    parameter int TILE_WORDS = 40,
    parameter logic [63:0] FEAT_BASE = 0,
    parameter logic [63:0] W_BASE    = 0,
    parameter int DIM_W      = 16,   // runtime H, W, C, CO, kernel, stride, pads
    parameter int BEATS_W    = 24,   // runtime beat counts (an input map, a tile)
    parameter int BURST      = 16,   // write burst beats (at most 256)
    parameter int WQ         = 40,   // write queue beats
    parameter int DESC_IN    = 0,    // 1: one step a start, its descriptor on `desc`
    parameter int PACK       = 0,    // 1: two output lanes' products a DSP48E2 (mac2.sv)
    parameter int IBUF_URAM  = 0,    // 1: the input buffer in UltraRAM (ram_style "ultra")
    parameter int TMEM_URAM  = 0     // 72-bit columns of the tile memory's rows in UltraRAM
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 start,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [32*24-1:0]    desc,            // DESC_IN = 1: the step's descriptor
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                busy,
    output logic                layer_end,
    output logic                done,
    // feature port: AXI4 read (input maps) and write (output maps)
    output logic [ADDR_W-1:0]   m_axi_f_araddr,
    output logic [7:0]          m_axi_f_arlen,
    output logic [2:0]          m_axi_f_arsize,
    output logic [1:0]          m_axi_f_arburst,
    output logic                m_axi_f_arvalid,
    input  wire                 m_axi_f_arready,
    input  wire  [DATA_W-1:0]   m_axi_f_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]          m_axi_f_rresp,   // errors are not handled
    input  wire                 m_axi_f_rlast,   // beats are counted
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                 m_axi_f_rvalid,
    output logic                m_axi_f_rready,
    output logic [ADDR_W-1:0]   m_axi_f_awaddr,
    output logic [7:0]          m_axi_f_awlen,
    output logic [2:0]          m_axi_f_awsize,
    output logic [1:0]          m_axi_f_awburst,
    output logic                m_axi_f_awvalid,
    input  wire                 m_axi_f_awready,
    output logic [DATA_W-1:0]   m_axi_f_wdata,
    output logic [DATA_W/8-1:0] m_axi_f_wstrb,
    output logic                m_axi_f_wlast,
    output logic                m_axi_f_wvalid,
    input  wire                 m_axi_f_wready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]          m_axi_f_bresp,   // errors are not handled
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                 m_axi_f_bvalid,
    output logic                m_axi_f_bready,
    // weight port: AXI4 read
    output logic [ADDR_W-1:0]   m_axi_w_araddr,
    output logic [7:0]          m_axi_w_arlen,
    output logic [2:0]          m_axi_w_arsize,
    output logic [1:0]          m_axi_w_arburst,
    output logic                m_axi_w_arvalid,
    input  wire                 m_axi_w_arready,
    input  wire  [DATA_W-1:0]   m_axi_w_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]          m_axi_w_rresp,
    input  wire                 m_axi_w_rlast,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                 m_axi_w_rvalid,
    output logic                m_axi_w_rready
);
  localparam int NFIELD = 24;
  localparam int DB = DATA_W / 8;
  localparam int DBW = $clog2(DB);
  localparam int PEW = $clog2(PE);
  localparam int SMW = $clog2(SIMD);
  localparam int WB = PE * SIMD;                 // bytes of a weight word
  localparam int RB = WB > DB ? WB : DB;         // bytes of a tile-memory row
  localparam int RBT = RB / DB;                  // beats a row
  localparam int WPR = RB / WB;                  // words a row
  localparam int PW = (8 * PE + WB - 1) / WB;    // parameter words of a tile
  localparam int NPB = 8 * PE;                   // parameter bytes of a tile
  localparam int PROWS = (NPB + RB - 1) / RB;    // rows holding them
  localparam int ROW0 = PW / WPR;                // tile row and word of weight word 0
  localparam int WORD0 = PW % WPR;
  localparam int TR = (TILE_WORDS * WB + RB - 1) / RB;  // rows of a tile half
  localparam int IROWS = (IBUF_WORDS * SIMD + DB - 1) / DB;
  localparam int RPB = DB / PE;                  // results a write beat
  localparam int TAW = $clog2(2 * TR);
  localparam int RW = TR > 1 ? $clog2(TR) : 1;
  localparam int WW = WPR > 1 ? $clog2(WPR) : 1;
  localparam int IRW = IROWS > 1 ? $clog2(IROWS) : 1;
  localparam int LNW = DB / SIMD > 1 ? $clog2(DB / SIMD) : 1;
  localparam int RBTW = RBT > 1 ? $clog2(RBT) : 1;
  localparam int PKW = RPB > 1 ? $clog2(RPB) : 1;
  localparam int QAW = WQ > 1 ? $clog2(WQ) : 1;
  localparam int QW = $clog2(WQ + 1);
  localparam int PAW = $clog2(NL * NFIELD);
  localparam int LW = NL > 1 ? $clog2(NL) : 1;
  localparam int LBW = $clog2(BURST + 1);
  localparam int CHUNK = 16;                     // beats of a load span (model/engine.py LOAD_CHUNK)

  initial begin
    if (PE < 1 || (PE & (PE - 1)) != 0 || SIMD < 1 || (SIMD & (SIMD - 1)) != 0 || PE % SIMD != 0)
      $error("conv_engine: PE=%0d and SIMD=%0d must be powers of two, SIMD | PE", PE, SIMD);
    if (DATA_W < 32 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 1024 || DB % PE != 0)
      $error("conv_engine: DATA_W=%0d must be a power of two in 32..1024 and PE=%0d | DATA_W/8", DATA_W, PE);
    if (BURST < 1 || BURST > 256 || WQ < BURST + 8)
      $error("conv_engine: BURST=%0d must be 1..256, WQ=%0d at least BURST + 8", BURST, WQ);
    if (FEAT_BASE % 64'(DB) != 0 || W_BASE % 64'(DB) != 0)
      $error("conv_engine: FEAT_BASE and W_BASE must be aligned to %0d bytes", DB);
    if (DESC_IN != 0 && NL != 1) $error("conv_engine: DESC_IN = 1 runs one step a start: NL=%0d must be 1", NL);
    if (PACK < 0 || PACK > 1 || (PACK == 1 && PE < 2))
      $error("conv_engine: PACK=%0d must be 0 or 1 (1 pairs output lanes: PE=%0d must be at least 2)", PACK, PE);
    if (IBUF_URAM < 0 || IBUF_URAM > 1) $error("conv_engine: IBUF_URAM=%0d must be 0 or 1", IBUF_URAM);
    if (TMEM_URAM < 0) $error("conv_engine: TMEM_URAM=%0d must be at least 0", TMEM_URAM);
  end

  // ---- program ROM and the layer's descriptor ---------------------------------------------
  /* verilator lint_off UNDRIVEN */  // a ROM: filled by $readmemh only
  logic [31:0] prog[NL*NFIELD];
  /* verilator lint_on UNDRIVEN */
  generate
    if (PROG_FILE != "") begin : g_prog
      initial $readmemh(PROG_FILE, prog);
    end
  endgenerate

  localparam logic [2:0] S_IDLE = 3'd0, S_DESC = 3'd1, S_DER1 = 3'd2, S_DER2 = 3'd3, S_RUN = 3'd4;
  logic [2:0] state;
  logic [PAW-1:0] raddr, lbase;
  logic [4:0] k;
  logic [31:0] rom_q;
  logic [31:0] d[NFIELD];
  logic [LW-1:0] layer;
  logic run, run0, done_c;

  // descriptor fields (engine_image.FIELDS)
  logic [DIM_W-1:0] f_h, f_w, f_c, f_co, f_kh, f_kw, f_sh, f_sw, f_pt, f_pl, f_pb, f_pr;
  logic [7:0] f_zpi, f_zpo, f_lo, f_hi;
  logic [31:0] f_in, f_out, f_wb, f_tb, f_is, f_os, f_fs;
  logic [15:0] f_fr;
  assign {f_h, f_w, f_c, f_co} = {DIM_W'(d[0]), DIM_W'(d[1]), DIM_W'(d[2]), DIM_W'(d[3])};
  assign {f_kh, f_kw, f_sh, f_sw} = {DIM_W'(d[4]), DIM_W'(d[5]), DIM_W'(d[6]), DIM_W'(d[7])};
  assign {f_pt, f_pl, f_pb, f_pr} = {DIM_W'(d[8]), DIM_W'(d[9]), DIM_W'(d[10]), DIM_W'(d[11])};
  assign {f_zpi, f_zpo, f_lo, f_hi} = {d[12][7:0], d[13][7:0], d[14][7:0], d[15][7:0]};
  assign {f_in, f_out, f_wb, f_tb} = {d[16], d[17], d[18], d[19]};
  assign {f_is, f_os} = {d[20], d[21]};
  assign {f_fr, f_fs} = {d[22][15:0], d[23]};

  // derived sizes (DERIVE1, DERIVE2)
  logic [31:0] hw, wpe, shwpe, swpe, ptw, nin;
  logic [DIM_W-1:0] cg, nf, cblk;
  logic [DBW-1:0] skip;           // IN_BASE mod DB: bytes of the first beat of a run to skip
  logic out_flush;                // OUT_STRIDE a multiple of DB: a run per fold
  logic [31:0] in_runs;           // the load: in_runs runs of in_beats beats, IN_STRIDE apart
  logic [BEATS_W-1:0] in_beats;
  logic [31:0] ibs;               // input buffer bytes between channel blocks
  logic [31:0] nin_blk;
  logic [31:0] nb0, nb;           // fold 0: bytes of each run its first (next) output row needs in
  assign nin_blk = (32'(skip) + (hw << PEW) + 32'(DB - 1)) >> DBW;
  // products of at most 24 x 16 bits, one DSP48E2 each (a step's map under 2^24 pixels and
  // a row under 2^24 bytes: engine_image.load_runs checks them; so a block under 2^24 beats)
  logic [31:0] hwc, khw, ptwc;
  assign hwc = 32'(hw[23:0]) * 32'(f_c);
  assign khw = 32'(wpe[23:0]) * 32'(f_kh);
  assign ptwc = 32'(wpe[23:0]) * 32'(f_pt);

  assign run = state == S_RUN;
  assign busy = state != S_IDLE;
  assign layer_end = done_c;
  assign done = done_c && 32'(layer) == NL - 1;

  always_ff @(posedge clk) rom_q <= prog[raddr];

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
      raddr <= '0;
      lbase <= '0;
      k <= '0;
      layer <= '0;
      run0 <= 1'b0;
    end else begin
      run0 <= state == S_DER2;
      case (state)
        S_IDLE: if (start) begin
          state <= DESC_IN != 0 ? S_DER1 : S_DESC;
          if (DESC_IN != 0) for (int i = 0; i < NFIELD; i++) d[i] <= desc[32*i+:32];
          raddr <= '0;
          lbase <= '0;
          k <= '0;
          layer <= '0;
        end
        S_DESC: begin
          raddr <= raddr + 1'b1;
          k <= k + 1'b1;
          if (k != '0) d[k-1'b1] <= rom_q;
          if (32'(k) == NFIELD) state <= S_DER1;
        end
        S_DER1: state <= S_DER2;
        S_DER2: state <= S_RUN;
        default: if (done_c) begin  // S_RUN
          if (32'(layer) == NL - 1) state <= S_IDLE;
          else begin
            state <= S_DESC;
            layer <= layer + 1'b1;
            raddr <= lbase + PAW'(NFIELD);
            lbase <= lbase + PAW'(NFIELD);
            k <= '0;
          end
        end
      endcase
    end
  end

  always_ff @(posedge clk) begin
    if (state == S_DER1) begin
      hw <= 32'(f_h) * 32'(f_w);
      wpe <= 32'(f_w) << PEW;
      swpe <= 32'(f_sw) << PEW;
      cg <= f_c >> SMW;
      nf <= f_co >> PEW;
      cblk <= f_c >> PEW;
      skip <= f_in[DBW-1:0];
      out_flush <= f_os[DBW-1:0] == '0;
    end
    if (state == S_DER2) begin
      // the input's blocks abut off the beat (one run of the map: fold 0's rows wait for the
      // last block's) or start on beats (a run a block, loaded chunk by chunk across them)
      if (f_is == hw << PEW && (f_is[DBW-1:0] != '0 || skip != '0)) begin
        nin <= (32'(skip) + hwc + 32'(DB - 1)) >> DBW;
        in_runs <= 32'd1;
        in_beats <= BEATS_W'((32'(skip) + hwc + 32'(DB - 1)) >> DBW);
        ibs <= hw << PEW;
        nb0 <= 32'(skip) + hwc - (hw << PEW) + khw - ptwc;
      end else begin
        nin <= 32'(cblk) * 32'(nin_blk[23:0]);
        in_runs <= 32'(cblk);
        in_beats <= BEATS_W'(nin_blk);
        ibs <= nin_blk << DBW;
        nb0 <= 32'(skip) + khw - ptwc;
      end
      shwpe <= 32'(f_sh) * wpe;
      ptw <= ptwc;
    end
  end

  // ---- load: the input map into the input buffer (conv_load.sv: the runs in chunks) ---------
  // (the input buffer itself, ibuf, is in stage 1 below: its memory style a parameter)
  logic [IRW-1:0] wrow;
  logic in_loaded;
  logic [31:0] avail;
  conv_load #(.DATA_W(DATA_W), .ADDR_W(ADDR_W), .BEATS_W(BEATS_W), .IRW(IRW), .CHUNK(CHUNK)) u_load (
      .clk(clk), .rst(rst), .run0(run0), .run(run),
      .first(ADDR_W'(FEAT_BASE) + ADDR_W'(f_in) - ADDR_W'(skip)), .runs(in_runs), .beats(in_beats),
      .stride(f_is), .frames(f_fr), .fstride(f_fs), .m_axi_araddr(m_axi_f_araddr), .m_axi_arlen(m_axi_f_arlen),
      .m_axi_arsize(m_axi_f_arsize), .m_axi_arburst(m_axi_f_arburst), .m_axi_arvalid(m_axi_f_arvalid),
      .m_axi_arready(m_axi_f_arready), .m_axi_rvalid(m_axi_f_rvalid), .m_axi_rready(m_axi_f_rready),
      .wrow(wrow), .loaded(in_loaded), .avail(avail));

  // ---- weights: tiles into the two halves of the tile memory ------------------------------
  // (the tile memory itself, tmem, is in stage 1 below: its memory style a parameter)
  logic [NPB*8-1:0] preg[2];    // the requantiser records of each half's tile
  logic [1:0] t_held, t_ready;  // halves requested and not yet computed; loaded, not started
  logic [DIM_W-1:0] t_left;     // tiles of the layer not yet requested
  logic [ADDR_W-1:0] t_addr;
  logic t_go, t_rdy, tile_end, start_c;
  assign t_go = run && t_left != '0 && t_held != 2'd2;

  axi_bursts #(.DATA_W(DATA_W), .ADDR_W(ADDR_W), .BEATS_W(BEATS_W)) w_ar (
      .clk(clk), .rst(rst), .go(t_go), .addr(t_addr), .beats(BEATS_W'(f_tb)), .ready(t_rdy),
      .ax_addr(m_axi_w_araddr), .ax_len(m_axi_w_arlen), .ax_size(m_axi_w_arsize),
      .ax_burst(m_axi_w_arburst), .ax_valid(m_axi_w_arvalid), .ax_ready(m_axi_w_arready));
  assign m_axi_w_rready = 1'b1;

  logic [RB*8-1:0] row_data;
  logic row_valid, row_last, wr_half;
  logic [RBTW-1:0] rb;
  logic [RW-1:0] wr_row;
  logic [31:0] wbeat;
  assign row_valid = m_axi_w_rvalid && 32'(rb) == RBT - 1;
  assign row_last = row_valid && wbeat == f_tb - 1;
  generate
    if (RBT == 1) begin : g_row1
      assign row_data = m_axi_w_rdata;
    end else begin : g_rowk
      logic [(RBT-1)*DATA_W-1:0] held;  // the row's earlier beats, lowest first
      if (RBT == 2) begin : g_two
        always_ff @(posedge clk) if (m_axi_w_rvalid) held <= m_axi_w_rdata;
      end else begin : g_more
        always_ff @(posedge clk) if (m_axi_w_rvalid) held <= {m_axi_w_rdata, held[(RBT-1)*DATA_W-1:DATA_W]};
      end
      assign row_data = {m_axi_w_rdata, held};
    end
  endgenerate

  generate
    if (NPB <= RB) begin : g_prm1  // the records in the tile's first row
      always_ff @(posedge clk) if (row_valid && wr_row == '0) preg[wr_half] <= row_data[NPB*8-1:0];
    end else begin : g_prmk        // in its first PROWS rows: shifted in, lowest first
      always_ff @(posedge clk)
        if (row_valid && 32'(wr_row) < PROWS) preg[wr_half] <= {row_data, preg[wr_half][NPB*8-1:RB*8]};
    end
  endgenerate
  always_ff @(posedge clk) begin
    if (rst) begin
      wr_half <= 1'b0;
      wr_row <= '0;
      rb <= '0;
      wbeat <= '0;
      t_held <= '0;
      t_ready <= '0;
      t_left <= '0;
      t_addr <= '0;
    end else begin
      if (m_axi_w_rvalid) begin
        rb <= 32'(rb) == RBT - 1 ? '0 : rb + 1'b1;
        wbeat <= wbeat == f_tb - 1 ? '0 : wbeat + 1'b1;
      end
      if (row_valid) begin
        wr_row <= row_last ? '0 : wr_row + 1'b1;
        if (row_last) wr_half <= !wr_half;
      end
      if (run0) begin
        t_left <= nf;
        t_addr <= ADDR_W'(W_BASE) + ADDR_W'(f_wb);
      end else if (t_go && t_rdy) begin
        t_left <= t_left - 1'b1;
        t_addr <= t_addr + ADDR_W'(f_tb << DBW);
      end
      t_held <= t_held + 2'(t_go && t_rdy) - 2'(tile_end);
      t_ready <= t_ready + 2'(row_last) - 2'(start_c);
    end
  end

  // ---- compute, stage 0: counters and window addresses --------------------------------------
  logic busy_c, cdone, room, fire, step_last, ox_last, oy_last, pix_last, lay_cend, row_first, gate;
  logic fr_last, fend;
  logic [15:0] fr;       // the frame of the fold's pixels (FRAMES > 1)
  logic [31:0] fboff;    // its input's first byte in the buffer: fr * nin beats
  logic [DIM_W-1:0] g, kx, ky, n;
  logic [31:0] j0, boff, kxoff, kyoff;
  logic signed [31:0] ix0, iy0, ocol, orow;
  logic [RW-1:0] trow;
  logic [WW-1:0] tword;
  logic c_half, in_win;
  logic [31:0] iaddr;
  logic [QW-1:0] wq_cnt;  // write queue (below): beats queued, not yet sent

  assign room = 32'(wq_cnt) + 7 <= WQ;
  // fold 0 starts an output row once each run holds the bytes up to its last input row (`nb`;
  // one run: the last block's), its last row once the whole input is in; the other folds
  // start after it
  assign row_first = g == '0 && kx == '0 && ky == '0 && ix0 == -signed'(32'(f_pl));
  assign gate = in_loaded || (n == '0 && !(row_first && (oy_last || avail < nb)));
  assign start_c = run && !busy_c && !cdone && t_ready != 2'd0 && gate && room;
  assign fire = (busy_c && room && gate) || start_c;
  assign step_last = g == cg - 1'b1 && kx == f_kw - 1'b1 && ky == f_kh - 1'b1;
  assign ox_last = ix0 + signed'(32'(f_sw)) + signed'(32'(f_kw)) > signed'(32'(f_w) + 32'(f_pr));
  assign oy_last = iy0 + signed'(32'(f_sh)) + signed'(32'(f_kh)) > signed'(32'(f_h) + 32'(f_pb));
  assign pix_last = ox_last && oy_last;
  assign fr_last = fr == f_fr - 1'b1;
  assign fend = fire && step_last && pix_last;
  assign tile_end = fend && fr_last;
  assign lay_cend = tile_end && n == nf - 1'b1;

  always_comb begin
    logic signed [31:0] iy, ix;
    iy = iy0 + signed'(32'(ky));
    ix = ix0 + signed'(32'(kx));
    in_win = iy >= 0 && iy < signed'(32'(f_h)) && ix >= 0 && ix < signed'(32'(f_w));
    iaddr = 32'(orow + ocol) + kyoff + kxoff + boff + j0;
  end

  always_ff @(posedge clk) begin
    if (rst || run0) begin
      busy_c <= 1'b0;
      cdone <= 1'b0;
      g <= '0;
      kx <= '0;
      ky <= '0;
      n <= '0;
      j0 <= '0;
      boff <= '0;
      kxoff <= '0;
      kyoff <= '0;
      ix0 <= -signed'(32'(f_pl));
      ocol <= -signed'(32'(f_pl) << PEW);
      iy0 <= -signed'(32'(f_pt));
      orow <= signed'(32'(skip)) - signed'(ptw);
      nb <= nb0;
      fr <= '0;
      fboff <= '0;
      trow <= RW'(ROW0);
      tword <= WW'(WORD0);
      if (rst) c_half <= 1'b0;
    end else if (fire) begin
      busy_c <= !tile_end;
      // step: channel group (a SIMD word of a PE block), then kx, then ky
      if (g != cg - 1'b1) begin
        g <= g + 1'b1;
        if (j0 + SIMD == PE) begin
          j0 <= '0;
          boff <= boff + ibs;
        end else j0 <= j0 + SIMD;
      end else begin
        g <= '0;
        j0 <= '0;
        boff <= '0;
        if (kx != f_kw - 1'b1) begin
          kx <= kx + 1'b1;
          kxoff <= kxoff + PE;
        end else begin
          kx <= '0;
          kxoff <= '0;
          if (ky != f_kh - 1'b1) begin
            ky <= ky + 1'b1;
            kyoff <= kyoff + wpe;
          end else begin
            ky <= '0;
            kyoff <= '0;
          end
        end
      end
      // the weight word follows the step (word PW + s of the tile)
      if (step_last) begin
        trow <= RW'(ROW0);
        tword <= WW'(WORD0);
      end else if (32'(tword) == WPR - 1) begin
        tword <= '0;
        trow <= trow + 1'b1;
      end else tword <= tword + 1'b1;
      // the output pixel
      if (step_last) begin
        if (!ox_last) begin
          ix0 <= ix0 + signed'(32'(f_sw));
          ocol <= ocol + signed'(swpe);
        end else begin
          ix0 <= -signed'(32'(f_pl));
          ocol <= -signed'(32'(f_pl) << PEW);
          if (!oy_last) begin
            iy0 <= iy0 + signed'(32'(f_sh));
            orow <= orow + signed'(shwpe);
            nb <= nb + shwpe;
          end else begin  // the frame's last pixel: the next frame's (rows gated as frame 0's) or frame 0's
            iy0 <= -signed'(32'(f_pt));
            nb <= nb0;
            if (!fr_last) begin
              orow <= signed'(fboff + (nin << DBW) + 32'(skip)) - signed'(ptw);
              fr <= fr + 1'b1;
              fboff <= fboff + (nin << DBW);
            end else begin
              orow <= signed'(32'(skip)) - signed'(ptw);
              fr <= '0;
              fboff <= '0;
            end
          end
        end
      end
      if (tile_end) begin
        c_half <= !c_half;
        n <= n + 1'b1;
        if (lay_cend) cdone <= 1'b1;
      end
    end
  end

  // ---- stage 1: input buffer, tile and parameter reads ----------------------------------------
  logic pad1, first1, last1, olast1, flast1;
  logic [DATA_W-1:0] xrow1;
  logic [LNW-1:0] lane1;
  logic [RB*8-1:0] wrow1;
  logic [WW-1:0] wsel1;
  logic [NPB*8-1:0] prm1;

  // the input buffer: a row a beat as loaded, a registered read (xrow1)
  if (IBUF_URAM != 0) begin : g_ibuf_uram
    (* ram_style = "ultra" *) logic [DATA_W-1:0] ibuf[IROWS];
    always_ff @(posedge clk) begin
      if (m_axi_f_rvalid) ibuf[wrow] <= m_axi_f_rdata;
      xrow1 <= ibuf[IRW'(iaddr >> DBW)];
    end
  end else begin : g_ibuf
    logic [DATA_W-1:0] ibuf[IROWS];
    always_ff @(posedge clk) begin
      if (m_axi_f_rvalid) ibuf[wrow] <= m_axi_f_rdata;
      xrow1 <= ibuf[IRW'(iaddr >> DBW)];
    end
  end

  // the tile memory: both halves, a row written as it completes, a registered read (wrow1);
  // its low UB bits in UltraRAM when TMEM_URAM asks for it
  localparam int UB = 72 * TMEM_URAM < 8 * RB ? 72 * TMEM_URAM : 8 * RB;
  logic [TAW-1:0] t_wa, t_ra;
  assign t_wa = TAW'(wr_half ? TR : 0) + TAW'(wr_row);
  assign t_ra = TAW'(c_half ? TR : 0) + TAW'(trow);
  if (UB > 0) begin : g_tmem_uram
    (* ram_style = "ultra" *) logic [UB-1:0] tmem[2*TR];
    always_ff @(posedge clk) begin
      if (row_valid) tmem[t_wa] <= row_data[UB-1:0];
      wrow1[UB-1:0] <= tmem[t_ra];
    end
  end
  if (UB < 8 * RB) begin : g_tmem
    logic [8*RB-1:UB] tmem[2*TR];
    always_ff @(posedge clk) begin
      if (row_valid) tmem[t_wa] <= row_data[8*RB-1:UB];
      wrow1[8*RB-1:UB] <= tmem[t_ra];
    end
  end

  always_ff @(posedge clk) begin
    lane1 <= LNW'(iaddr[DBW-1:0] >> SMW);
    wsel1 <= tword;
    prm1 <= preg[c_half];
    pad1 <= !in_win;
    first1 <= g == '0 && kx == '0 && ky == '0;
    last1 <= step_last;
    olast1 <= lay_cend;
    flast1 <= fend;
  end

  // ---- stage 2: products ----------------------------------------------------------------------
  logic [SIMD*8-1:0] x1;
  logic [WB*8-1:0] w1;
  logic [PE*SIMD*16-1:0] prod2;  // product (p, s) at bits [16*(p*SIMD+s) +: 16], a cycle after x1, w1
  logic [PE*32-1:0] bias2, rq2;
  logic v1, v2, first2, last2, olast2, flast2;
  assign x1 = pad1 ? {SIMD{f_zpi}} : xrow1[32'(lane1)*SIMD*8+:SIMD*8];
  assign w1 = wrow1[32'(wsel1)*WB*8+:WB*8];

  generate
    if (PACK == 1) begin : g_pack
      // lanes 2i (w_lo) and 2i+1 (w_hi) of input lane s: one multiply of x1's byte s, its
      // product register the DSP's P register, the two fields separated behind it
      for (genvar i = 0; i < PE / 2; i++) begin : g_pair
        for (genvar s = 0; s < SIMD; s++) begin : g_s
          mac2 m (
              .clk (clk),
              .en  (1'b1),
              .x   (x1[8*s+:8]),
              .w_hi(w1[8*((2*i+1)*SIMD+s)+:8]),
              .w_lo(w1[8*(2*i*SIMD+s)+:8]),
              .p_hi(prod2[16*((2*i+1)*SIMD+s)+:16]),
              .p_lo(prod2[16*(2*i*SIMD+s)+:16])
          );
        end
      end
    end else begin : g_plain
      always_ff @(posedge clk) begin
        for (int p = 0; p < PE; p++)
          for (int s = 0; s < SIMD; s++)
            prod2[16*(p*SIMD+s)+:16] <= signed'(x1[8*s+:8]) * signed'(w1[8*(p*SIMD+s)+:8]);
      end
    end
  endgenerate

  always_ff @(posedge clk) begin
    for (int p = 0; p < PE; p++) begin
      bias2[32*p+:32] <= prm1[64*p+:32];
      rq2[32*p+:32] <= prm1[64*p+32+:32];
    end
    first2 <= first1;
    last2 <= last1;
    olast2 <= olast1;
    flast2 <= flast1;
  end

  // ---- stage 3: accumulate --------------------------------------------------------------------
  logic signed [31:0] acc[PE];
  logic signed [31:0] acc_next[PE];
  logic [PE*32-1:0] acc3, rq3;
  logic v3, olast3, flast3;

  always_comb begin
    for (int p = 0; p < PE; p++) begin
      acc_next[p] = first2 ? signed'(bias2[32*p+:32]) : acc[p];
      for (int s = 0; s < SIMD; s++) acc_next[p] = acc_next[p] + 32'(signed'(prod2[16*(p*SIMD+s)+:16]));
    end
  end

  always_ff @(posedge clk) begin
    if (v2) for (int p = 0; p < PE; p++) acc[p] <= acc_next[p];
    for (int p = 0; p < PE; p++) acc3[32*p+:32] <= acc_next[p];
    rq3 <= rq2;
    olast3 <= olast2;
    flast3 <= flast2;
  end

  // ---- stages 4-5: requantise ---------------------------------------------------------------------
  logic v4, v5, olast4, olast5, flast4, flast5;
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
    flast4 <= flast3;
    flast5 <= flast4;
  end

  for (genvar p = 0; p < PE; p++) begin : g_rqlane
    rq_lane lane (
        .clk(clk),
        .en (1'b1),
        .acc(acc3[32*p+:32]),
        .rq ({8'd0, rq3[32*p+:32], f_zpo, f_lo, f_hi}),
        .y  (y5[8*p+:8])
    );
  end

  // ---- store: pack results into beats, the write queue, write bursts ------------------------------
  logic [DATA_W-1:0] wq[WQ];
  logic [DATA_W-1:0] pk_data, pk_next;
  logic [PKW-1:0] pk_cnt;
  logic [QAW-1:0] wp, rp;
  logic [QW-1:0] unassigned;  // queued beats not yet in a burst
  logic flushed;              // the layer's last result is queued
  logic push, w_go, aw_pend, w_hs, aw_hs;
  logic [LBW-1:0] wleft, wlen, wideal;
  logic [ADDR_W-1:0] wpos, rbase;  // the next burst's address; the current run's first
  logic [ADDR_W-1:0] fbase;        // the current fold's frame-0 run's first
  logic [15:0] wf;                 // the current run's frame
  // flush mode (OUT_STRIDE a multiple of DB): a run per fold (and frame), each run's last beat
  // pushed zero-padded; its beats (run_beats) are counted on the first run's pushes (run_known
  // after its last), and bursts are cut at a run's end unless the runs abut (one frame and
  // OUT_STRIDE = run_beats·DB)
  logic run_known, run_jump, run_end;
  logic [BEATS_W-1:0] run_beats, run_pos, run_cnt;
  logic [12:0] w4k;
  logic [15:0] outst;         // write bursts without a response

  always_comb begin
    pk_next = pk_data;
    pk_next[32'(pk_cnt)*PE*8+:PE*8] = y5;
  end
  assign push = v5 && (32'(pk_cnt) == RPB - 1 || olast5 || (out_flush && flast5));
  assign run_jump = out_flush && run_known && (f_fr != 16'd1 || f_os != 32'(run_beats) << DBW);

  always_comb begin
    w4k = 13'((13'd4096 - {1'b0, wpos[11:0]}) >> DBW);
    wideal = LBW'(BURST);
    if (32'(w4k) < BURST) wideal = LBW'(w4k);
    if (run_jump && 32'(run_beats - run_pos) < 32'(wideal)) wideal = LBW'(run_beats - run_pos);
    wlen = 32'(unassigned) >= 32'(wideal) ? wideal : LBW'(unassigned);
  end
  assign run_end = run_jump && run_pos + BEATS_W'(wlen) == run_beats;
  assign w_go = run && !run0 && !aw_pend && wleft == '0 &&  // run0: the run state is the last step's
                (32'(unassigned) >= 32'(wideal) || (flushed && unassigned != '0));
  assign m_axi_f_awvalid = aw_pend;
  assign m_axi_f_awsize = 3'(DBW);
  assign m_axi_f_awburst = 2'b01;  // INCR
  assign m_axi_f_wvalid = wleft != '0;
  assign m_axi_f_wdata = wq[rp];
  assign m_axi_f_wstrb = '1;
  assign m_axi_f_wlast = wleft == LBW'(1);
  assign m_axi_f_bready = 1'b1;
  assign aw_hs = m_axi_f_awvalid && m_axi_f_awready;
  assign w_hs = m_axi_f_wvalid && m_axi_f_wready;
  assign done_c = run && !run0 && flushed && unassigned == '0 && !aw_pend && wleft == '0 && outst == '0;

  always_ff @(posedge clk) begin
    if (push) wq[wp] <= pk_next;
    if (w_go) begin
      m_axi_f_awaddr <= wpos;
      m_axi_f_awlen <= 8'(wlen - 1'b1);
    end
  end
  always_ff @(posedge clk) begin
    if (rst || run0) begin
      pk_data <= '0;
      pk_cnt <= '0;
      flushed <= 1'b0;
      wpos <= ADDR_W'(FEAT_BASE) + ADDR_W'(f_out);
      rbase <= ADDR_W'(FEAT_BASE) + ADDR_W'(f_out);
      fbase <= ADDR_W'(FEAT_BASE) + ADDR_W'(f_out);
      wf <= '0;
      run_known <= 1'b0;
      run_beats <= '0;
      run_pos <= '0;
      run_cnt <= '0;
    end else begin
      if (v5) begin
        pk_data <= push ? '0 : pk_next;
        pk_cnt <= push ? '0 : pk_cnt + 1'b1;
      end
      if (v5 && olast5) flushed <= 1'b1;
      if (push && !run_known) begin
        run_cnt <= run_cnt + 1'b1;
        if (flast5) begin
          run_known <= 1'b1;
          run_beats <= run_cnt + 1'b1;
        end
      end
      if (w_go) begin
        if (run_end) begin
          run_pos <= '0;
          if (wf != f_fr - 1'b1) begin  // the fold's next frame
            wf <= wf + 1'b1;
            wpos <= rbase + ADDR_W'(f_fs);
            rbase <= rbase + ADDR_W'(f_fs);
          end else begin                // the next fold's frame 0
            wf <= '0;
            wpos <= fbase + ADDR_W'(f_os);
            rbase <= fbase + ADDR_W'(f_os);
            fbase <= fbase + ADDR_W'(f_os);
          end
        end else begin
          wpos <= wpos + ADDR_W'(32'(wlen) << DBW);
          run_pos <= run_pos + BEATS_W'(wlen);
        end
      end
    end
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      wp <= '0;
      rp <= '0;
      wq_cnt <= '0;
      unassigned <= '0;
      aw_pend <= 1'b0;
      wleft <= '0;
      outst <= '0;
    end else begin
      if (push) wp <= 32'(wp) == WQ - 1 ? '0 : wp + 1'b1;
      if (w_hs) rp <= 32'(rp) == WQ - 1 ? '0 : rp + 1'b1;
      wq_cnt <= wq_cnt + QW'(push) - QW'(w_hs);
      unassigned <= unassigned + QW'(push) - (w_go ? QW'(wlen) : '0);
      if (w_go) aw_pend <= 1'b1;
      else if (aw_hs) aw_pend <= 1'b0;
      if (w_go) wleft <= wlen;
      else if (w_hs) wleft <= wleft - 1'b1;
      outst <= outst + 16'(aw_hs) - 16'(m_axi_f_bvalid);
    end
  end
endmodule
`default_nettype wire
