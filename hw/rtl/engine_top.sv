`default_nettype none
// The layer engine's top (docs/engine.md, "Engine top (sequencer)"): the conv unit
// (conv_engine.sv, DESC_IN = 1), the window unit (engine_window.sv) and the element-wise unit
// (engine_eltwise.sv) time-shared over a program of steps (codegen/engine_program.py), one
// unit active at a time, all on one feature AXI4 port (read + write) and one weight AXI4
// read port.
//
// Program ROM (PROG_FILE, $readmemh, 32-bit words, ROM_WORDS deep): per step, in order, a
// head word {last, 29'b0, unit[1:0]} (unit 0 conv, 1 window, 2 eltwise: engine_program.UNITS;
// bit 31 set on the frame's last step) and then exactly the unit's descriptor words (24,
// WNF or ENF: engine_image.FIELDS, WINDOW_FIELDS, ELTWISE_FIELDS order). Records follow each
// other without gaps (sim/engine_top.py `rom_words`).
//
// Sequencer, per frame (a `start` pulse in IDLE), for each step in turn:
//   READ : the step's words are read one a cycle (registered ROM reads): cycle k = 0 .. NF + 1
//          of the step (NF its unit's descriptor words): k = 1 latches the head, k >= 2 field
//          k - 2; the address runs on to the next record's head and stops there.
//   GO   : one cycle, the unit's `start` (its descriptor is held in the top's register until
//          the next step's READ: window and eltwise read `desc` while they run).
//   WAIT : until the unit's `done`; `step_end` pulses that cycle, and `done` too after the
//          last step (then IDLE: the next start is taken from the next cycle); else READ.
// So a step started at t (the frame's start, or the previous step's done) starts its unit at
// t + NF + 3 and ends at that plus the unit's own start-to-done cycles (docs/engine.md;
// bbgrap_hls/model/engine_top.py `frame_cycles`, exact).
//
// Muxing: the active unit's (the last head's) AXI outputs drive the ports, FEAT_BASE added
// to feature addresses and W_BASE to weight addresses (both multiples of 4 KB, so the units'
// 4 KB burst cuts hold; the element-wise unit's B bursts on the weight port, w_axi_feat, are
// feature addresses: one memory behind both ports); the handshake inputs (ready, rvalid, bvalid) reach only the active
// unit, the data inputs all. A unit is quiet between its done and its next start (every read
// returned, every write answered), so switching between steps loses nothing.
module engine_top #(
    parameter int PE         = 4,     // conv unit PE; window and element-wise G
    parameter int SIMD       = 2,
    parameter int DATA_W     = 64,    // both ports (the window unit needs 64 at least)
    parameter int ADDR_W     = 32,
    parameter int ROM_WORDS  = 64,
    parameter     PROG_FILE  = "",
    parameter logic [63:0] FEAT_BASE = 0,
    parameter logic [63:0] W_BASE    = 0,
    // conv unit (conv_engine.sv)
    parameter int IBUF_WORDS = 64,
    parameter int TILE_WORDS = 40,
    parameter int DIM_W      = 16,
    parameter int BEATS_W    = 24,
    parameter int BURST      = 16,
    parameter int WQ         = 40,
    parameter int PACK       = 0,     // conv unit: 1, two output lanes' products a DSP48E2 (mac2.sv)
    parameter int IBUF_URAM  = 0,     // conv unit: 1, its input buffer in UltraRAM
    parameter int TMEM_URAM  = 0,     // conv unit: 72-bit columns of its tile rows in UltraRAM
    // window unit (engine_window.sv)
    parameter int WMAX       = 64,
    parameter int WOMAX      = 64,
    parameter int KB         = 4,
    parameter int KMAX       = 9,
    parameter int TAPS       = 1,
    parameter int WNF        = 27,    // len(WINDOW_FIELDS)
    // element-wise unit (engine_eltwise.sv)
    parameter int EBURST     = 64,
    parameter int CHUNKS     = 4,
    parameter int CMAX       = 512,
    parameter int ELANES     = DATA_W / 8,  // element-wise unit: byte lanes computed a cycle
    parameter int ENF        = 21     // len(ELTWISE_FIELDS): the unit's desc width
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 start,
    output logic                busy,
    output logic                step_end,
    output logic                done,
    // feature port: AXI4 read and write
    output logic [ADDR_W-1:0]   m_axi_f_araddr,
    output logic [7:0]          m_axi_f_arlen,
    output logic [2:0]          m_axi_f_arsize,
    output logic [1:0]          m_axi_f_arburst,
    output logic                m_axi_f_arvalid,
    input  wire                 m_axi_f_arready,
    input  wire  [DATA_W-1:0]   m_axi_f_rdata,
    input  wire  [1:0]          m_axi_f_rresp,
    input  wire                 m_axi_f_rlast,
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
    input  wire  [1:0]          m_axi_f_bresp,
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
    input  wire  [1:0]          m_axi_w_rresp,
    input  wire                 m_axi_w_rlast,
    input  wire                 m_axi_w_rvalid,
    output logic                m_axi_w_rready
);
  localparam int CNF = 24;  // engine_image.FIELDS
  localparam int DMAX = CNF > WNF ? (CNF > ENF ? CNF : ENF) : (WNF > ENF ? WNF : ENF);
  localparam int RAW = $clog2(ROM_WORDS + 1);
  localparam int KW = $clog2(DMAX + 2);
  localparam logic [1:0] U_CONV = 2'd0, U_WIN = 2'd1, U_ELT = 2'd2;

  initial begin
    if (FEAT_BASE % 64'd4096 != 0 || W_BASE % 64'd4096 != 0)
      $error("engine_top: FEAT_BASE and W_BASE must be multiples of 4096 (the units cut bursts at 4 KB)");
    if (ROM_WORDS < 1) $error("engine_top: ROM_WORDS=%0d", ROM_WORDS);
  end

  // ---- program ROM and sequencer --------------------------------------------------------------
  /* verilator lint_off UNDRIVEN */  // a ROM: filled by $readmemh only
  logic [31:0] prog[2**RAW];  // a power of two: the address after the last record reads in range
  /* verilator lint_on UNDRIVEN */
  generate
    if (PROG_FILE != "") begin : g_prog
      initial $readmemh(PROG_FILE, prog);
    end
  endgenerate

  localparam logic [1:0] S_IDLE = 2'd0, S_READ = 2'd1, S_GO = 2'd2, S_WAIT = 2'd3;
  logic [1:0] state, unit;
  logic last;
  logic [RAW-1:0] raddr;
  logic [KW-1:0] k;
  logic [31:0] rom_q;
  logic [32*DMAX-1:0] dq;  // the step's descriptor, field i at dq[32*i +: 32]
  logic [KW-1:0] nf;       // the unit's descriptor words
  logic u_done;
  logic [2:0] ustart, udone;

  always_comb begin
    case (unit)
      U_CONV: nf = KW'(CNF);
      U_WIN: nf = KW'(WNF);
      default: nf = KW'(ENF);
    endcase
  end
  assign u_done = udone[unit];
  assign busy = state != S_IDLE;
  assign step_end = state == S_WAIT && u_done;
  assign done = step_end && last;
  for (genvar i = 0; i < 3; i++) begin : g_start
    assign ustart[i] = state == S_GO && unit == 2'(i);
  end

  always_ff @(posedge clk) rom_q <= prog[raddr];

  always_ff @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
      raddr <= '0;
      k <= '0;
      unit <= U_CONV;
      last <= 1'b0;
    end else begin
      case (state)
        S_IDLE: if (start) begin
          state <= S_READ;
          raddr <= '0;
          k <= '0;
        end
        S_READ: begin
          k <= k + 1'b1;
          if (k == KW'(1)) begin
            unit <= rom_q[1:0];
            last <= rom_q[31];
          end
          if (k >= KW'(2) && k - 1'b1 == nf) state <= S_GO;  // the last field: raddr is the next head
          else raddr <= raddr + 1'b1;
        end
        S_GO: state <= S_WAIT;
        default: if (u_done) begin  // S_WAIT
          state <= last ? S_IDLE : S_READ;
          k <= '0;
        end
      endcase
    end
  end
  always_ff @(posedge clk) begin
    if (state == S_READ && k >= KW'(2)) dq[32*(32'(k)-2)+:32] <= rom_q;
  end

  // ---- the units -------------------------------------------------------------------------------
  // per unit: its feature port outputs, its weight port outputs
  logic [ADDR_W-1:0] f_araddr[3], f_awaddr[3], w_araddr[3];
  logic [7:0] f_arlen[3], f_awlen[3], w_arlen[3];
  logic [2:0] f_arsize[3], f_awsize[3], w_arsize[3];
  logic [1:0] f_arburst[3], f_awburst[3], w_arburst[3];
  logic [2:0] f_arvalid, f_rready, f_awvalid, f_wlast, f_wvalid, f_bready, w_arvalid, w_rready;
  logic [DATA_W-1:0] f_wdata[3];
  logic [DATA_W/8-1:0] f_wstrb[3];
  logic [2:0] sel;
  logic e_wfeat;  // the element-wise unit's weight-port request reads the feature image (B)
  assign sel = 3'b001 << unit;

  /* verilator lint_off PINCONNECTEMPTY */
  conv_engine #(
      .PE(PE), .SIMD(SIMD), .DATA_W(DATA_W), .ADDR_W(ADDR_W), .NL(1), .IBUF_WORDS(IBUF_WORDS),
      .TILE_WORDS(TILE_WORDS), .DIM_W(DIM_W), .BEATS_W(BEATS_W), .BURST(BURST), .WQ(WQ), .DESC_IN(1),
      .PACK(PACK), .IBUF_URAM(IBUF_URAM), .TMEM_URAM(TMEM_URAM)
  ) u_conv (
      .clk(clk), .rst(rst), .start(ustart[0]), .desc(dq[32*CNF-1:0]), .busy(), .layer_end(), .done(udone[0]),
      .m_axi_f_araddr(f_araddr[0]), .m_axi_f_arlen(f_arlen[0]), .m_axi_f_arsize(f_arsize[0]),
      .m_axi_f_arburst(f_arburst[0]), .m_axi_f_arvalid(f_arvalid[0]), .m_axi_f_arready(m_axi_f_arready && sel[0]),
      .m_axi_f_rdata(m_axi_f_rdata), .m_axi_f_rresp(m_axi_f_rresp), .m_axi_f_rlast(m_axi_f_rlast),
      .m_axi_f_rvalid(m_axi_f_rvalid && sel[0]), .m_axi_f_rready(f_rready[0]),
      .m_axi_f_awaddr(f_awaddr[0]), .m_axi_f_awlen(f_awlen[0]), .m_axi_f_awsize(f_awsize[0]),
      .m_axi_f_awburst(f_awburst[0]), .m_axi_f_awvalid(f_awvalid[0]), .m_axi_f_awready(m_axi_f_awready && sel[0]),
      .m_axi_f_wdata(f_wdata[0]), .m_axi_f_wstrb(f_wstrb[0]), .m_axi_f_wlast(f_wlast[0]),
      .m_axi_f_wvalid(f_wvalid[0]), .m_axi_f_wready(m_axi_f_wready && sel[0]), .m_axi_f_bresp(m_axi_f_bresp),
      .m_axi_f_bvalid(m_axi_f_bvalid && sel[0]), .m_axi_f_bready(f_bready[0]),
      .m_axi_w_araddr(w_araddr[0]), .m_axi_w_arlen(w_arlen[0]), .m_axi_w_arsize(w_arsize[0]),
      .m_axi_w_arburst(w_arburst[0]), .m_axi_w_arvalid(w_arvalid[0]), .m_axi_w_arready(m_axi_w_arready && sel[0]),
      .m_axi_w_rdata(m_axi_w_rdata), .m_axi_w_rresp(m_axi_w_rresp), .m_axi_w_rlast(m_axi_w_rlast),
      .m_axi_w_rvalid(m_axi_w_rvalid && sel[0]), .m_axi_w_rready(w_rready[0]));
  /* verilator lint_on PINCONNECTEMPTY */

  engine_window #(
      .G(PE), .DATA_W(DATA_W), .ADDR_W(ADDR_W), .WMAX(WMAX), .WOMAX(WOMAX), .KB(KB), .KMAX(KMAX),
      .TAPS(TAPS), .NF(WNF)
  ) u_window (
      .clk(clk), .rst(rst), .start(ustart[1]), .desc(dq[32*WNF-1:0]), .done(udone[1]),
      .m_axi_araddr(f_araddr[1]), .m_axi_arlen(f_arlen[1]), .m_axi_arsize(f_arsize[1]),
      .m_axi_arburst(f_arburst[1]), .m_axi_arvalid(f_arvalid[1]), .m_axi_arready(m_axi_f_arready && sel[1]),
      .m_axi_rdata(m_axi_f_rdata), .m_axi_rresp(m_axi_f_rresp), .m_axi_rlast(m_axi_f_rlast),
      .m_axi_rvalid(m_axi_f_rvalid && sel[1]), .m_axi_rready(f_rready[1]),
      .m_axi_awaddr(f_awaddr[1]), .m_axi_awlen(f_awlen[1]), .m_axi_awsize(f_awsize[1]),
      .m_axi_awburst(f_awburst[1]), .m_axi_awvalid(f_awvalid[1]), .m_axi_awready(m_axi_f_awready && sel[1]),
      .m_axi_wdata(f_wdata[1]), .m_axi_wstrb(f_wstrb[1]), .m_axi_wlast(f_wlast[1]),
      .m_axi_wvalid(f_wvalid[1]), .m_axi_wready(m_axi_f_wready && sel[1]), .m_axi_bresp(m_axi_f_bresp),
      .m_axi_bvalid(m_axi_f_bvalid && sel[1]), .m_axi_bready(f_bready[1]),
      .w_axi_araddr(w_araddr[1]), .w_axi_arlen(w_arlen[1]), .w_axi_arsize(w_arsize[1]),
      .w_axi_arburst(w_arburst[1]), .w_axi_arvalid(w_arvalid[1]), .w_axi_arready(m_axi_w_arready && sel[1]),
      .w_axi_rdata(m_axi_w_rdata), .w_axi_rresp(m_axi_w_rresp), .w_axi_rlast(m_axi_w_rlast),
      .w_axi_rvalid(m_axi_w_rvalid && sel[1]), .w_axi_rready(w_rready[1]));

  engine_eltwise #(
      .G(PE), .DATA_W(DATA_W), .ADDR_W(ADDR_W), .BURST(EBURST), .CHUNKS(CHUNKS), .CMAX(CMAX),
      .LANES(ELANES)
  ) u_eltwise (
      .clk(clk), .rst(rst), .start(ustart[2]), .desc(dq[32*ENF-1:0]), .done(udone[2]),
      .m_axi_araddr(f_araddr[2]), .m_axi_arlen(f_arlen[2]), .m_axi_arsize(f_arsize[2]),
      .m_axi_arburst(f_arburst[2]), .m_axi_arvalid(f_arvalid[2]), .m_axi_arready(m_axi_f_arready && sel[2]),
      .m_axi_rdata(m_axi_f_rdata), .m_axi_rresp(m_axi_f_rresp), .m_axi_rlast(m_axi_f_rlast),
      .m_axi_rvalid(m_axi_f_rvalid && sel[2]), .m_axi_rready(f_rready[2]),
      .m_axi_awaddr(f_awaddr[2]), .m_axi_awlen(f_awlen[2]), .m_axi_awsize(f_awsize[2]),
      .m_axi_awburst(f_awburst[2]), .m_axi_awvalid(f_awvalid[2]), .m_axi_awready(m_axi_f_awready && sel[2]),
      .m_axi_wdata(f_wdata[2]), .m_axi_wstrb(f_wstrb[2]), .m_axi_wlast(f_wlast[2]),
      .m_axi_wvalid(f_wvalid[2]), .m_axi_wready(m_axi_f_wready && sel[2]), .m_axi_bresp(m_axi_f_bresp),
      .m_axi_bvalid(m_axi_f_bvalid && sel[2]), .m_axi_bready(f_bready[2]),
      .w_axi_araddr(w_araddr[2]), .w_axi_arlen(w_arlen[2]), .w_axi_arsize(w_arsize[2]),
      .w_axi_arburst(w_arburst[2]), .w_axi_arvalid(w_arvalid[2]), .w_axi_arready(m_axi_w_arready && sel[2]),
      .w_axi_rdata(m_axi_w_rdata), .w_axi_rresp(m_axi_w_rresp), .w_axi_rlast(m_axi_w_rlast),
      .w_axi_rvalid(m_axi_w_rvalid && sel[2]), .w_axi_rready(w_rready[2]), .w_axi_feat(e_wfeat));

  // ---- the ports: the active unit's --------------------------------------------------------------
  logic [1:0] s;
  assign s = unit == 2'd3 ? U_ELT : unit;  // never 3 in a well-formed ROM
  assign m_axi_f_araddr = f_araddr[s] + ADDR_W'(FEAT_BASE);
  assign m_axi_f_arlen = f_arlen[s];
  assign m_axi_f_arsize = f_arsize[s];
  assign m_axi_f_arburst = f_arburst[s];
  assign m_axi_f_arvalid = f_arvalid[s];
  assign m_axi_f_rready = f_rready[s];
  assign m_axi_f_awaddr = f_awaddr[s] + ADDR_W'(FEAT_BASE);
  assign m_axi_f_awlen = f_awlen[s];
  assign m_axi_f_awsize = f_awsize[s];
  assign m_axi_f_awburst = f_awburst[s];
  assign m_axi_f_awvalid = f_awvalid[s];
  assign m_axi_f_wdata = f_wdata[s];
  assign m_axi_f_wstrb = f_wstrb[s];
  assign m_axi_f_wlast = f_wlast[s];
  assign m_axi_f_wvalid = f_wvalid[s];
  assign m_axi_f_bready = f_bready[s];
  assign m_axi_w_araddr = w_araddr[s] + (s == U_ELT && e_wfeat ? ADDR_W'(FEAT_BASE) : ADDR_W'(W_BASE));
  assign m_axi_w_arlen = w_arlen[s];
  assign m_axi_w_arsize = w_arsize[s];
  assign m_axi_w_arburst = w_arburst[s];
  assign m_axi_w_arvalid = w_arvalid[s];
  assign m_axi_w_rready = w_rready[s];
endmodule
`default_nettype wire
