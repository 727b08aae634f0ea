`default_nettype none
// AXI4 read master for weight tiles: tile n (n = 0..TILES-1, then 0 again) is TILE_BEATS
// beats of DATA_W bits from BASE + n*TILE_BEATS*DATA_W/8, read as INCR bursts of at most
// 256 beats that never cross a 4 KB boundary. A tile's first burst is issued only while
// `free` is high (the caller has room for a whole tile; it never stalls the R channel, so
// rready is always high); the other bursts of the tile follow one per cycle, several
// outstanding. Every ROW_BEATS beats make one row (beat b at bits [b*DATA_W +: DATA_W]),
// delivered on row_valid in the cycle of the row's last beat; row_last marks a tile's last
// row. tile_start pulses with the handshake of a tile's first burst.
module axi_read #(
    parameter int DATA_W     = 128,
    parameter int ADDR_W     = 32,
    parameter logic [63:0] BASE = 0,
    parameter int TILE_BEATS = 4,
    parameter int TILES      = 2,
    parameter int ROW_BEATS  = 1
) (
    input  wire                           clk,
    input  wire                           rst,
    input  wire                           free,
    output logic                          tile_start,
    output logic [ADDR_W-1:0]             m_axi_araddr,
    output logic [7:0]                    m_axi_arlen,
    output logic [2:0]                    m_axi_arsize,
    output logic [1:0]                    m_axi_arburst,
    output logic                          m_axi_arvalid,
    input  wire                           m_axi_arready,
    input  wire  [DATA_W-1:0]             m_axi_rdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire  [1:0]                    m_axi_rresp,   // errors are not handled
    input  wire                           m_axi_rlast,   // beats are counted
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                           m_axi_rvalid,
    output logic                          m_axi_rready,
    output logic                          row_valid,
    output logic                          row_last,
    output logic [ROW_BEATS*DATA_W-1:0]   row_data
);
  localparam int DB = DATA_W / 8;
  localparam int DBW = $clog2(DB);
  localparam int TB = TILE_BEATS;
  localparam int BW = $clog2(TB + 1);
  localparam int NW = TILES > 1 ? $clog2(TILES) : 1;
  localparam int RBW = ROW_BEATS > 1 ? $clog2(ROW_BEATS) : 1;
  localparam int CW = $clog2(TB + 1);

  initial begin
    if (DATA_W < 8 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 1024)
      $error("axi_read: DATA_W=%0d must be a power of two in 8..1024", DATA_W);
    if (BASE % 64'(DB) != 0) $error("axi_read: BASE must be aligned to %0d bytes", DB);
    if (TB < 1 || TB % ROW_BEATS != 0) $error("axi_read: ROW_BEATS=%0d must divide TILE_BEATS=%0d", ROW_BEATS, TB);
    if (ADDR_W < 13) $error("axi_read: ADDR_W=%0d below 13", ADDR_W);
  end

  // ---- address channel -----------------------------------------------------------------
  logic [ADDR_W-1:0] addr;   // next burst's address
  logic [BW-1:0] left;       // beats of the current tile not yet requested
  logic [NW-1:0] n;          // tile being requested
  logic [12:0] to4k;         // beats to the next 4 KB boundary (at most 4096/DB)
  logic [BW-1:0] len;        // this burst's beats
  logic first;

  always_comb begin
    to4k = 13'((13'd4096 - {1'b0, addr[11:0]}) >> DBW);
    len = left;
    if (BW'(256) < len && BW > 8) len = BW'(256);
    if (32'(to4k) < 32'(len)) len = BW'(to4k);
  end
  assign first = left == BW'(TB);
  assign m_axi_arvalid = !first || free;
  assign m_axi_araddr = addr;
  assign m_axi_arlen = 8'(len - 1'b1);
  assign m_axi_arsize = 3'(DBW);
  assign m_axi_arburst = 2'b01;  // INCR
  assign tile_start = m_axi_arvalid && m_axi_arready && first;

  always_ff @(posedge clk) begin
    if (rst) begin
      addr <= ADDR_W'(BASE);
      left <= BW'(TB);
      n <= '0;
    end else if (m_axi_arvalid && m_axi_arready) begin
      if (left == len) begin  // the tile's last burst
        left <= BW'(TB);
        n <= n == NW'(TILES - 1) ? '0 : n + 1'b1;
        addr <= n == NW'(TILES - 1) ? ADDR_W'(BASE) : addr + ADDR_W'(32'(len) << DBW);
      end else begin
        left <= left - len;
        addr <= addr + ADDR_W'(32'(len) << DBW);
      end
    end
  end

  // ---- data channel: beats into rows ---------------------------------------------------
  logic [CW-1:0] got;  // beats of the current tile received
  logic [RBW-1:0] rb;  // beat within the row
  logic take;
  assign m_axi_rready = 1'b1;
  assign take = m_axi_rvalid;
  assign row_valid = take && rb == RBW'(ROW_BEATS - 1);
  assign row_last = row_valid && got == CW'(TB - 1);

  generate
    if (ROW_BEATS == 1) begin : g_one
      assign row_data = m_axi_rdata;
    end else begin : g_gather
      logic [(ROW_BEATS-1)*DATA_W-1:0] held;  // the row's earlier beats, lowest first
      if (ROW_BEATS == 2) begin : g_two
        always_ff @(posedge clk) if (take) held <= m_axi_rdata;
      end else begin : g_more
        always_ff @(posedge clk) if (take) held <= {m_axi_rdata, held[(ROW_BEATS-1)*DATA_W-1:DATA_W]};
      end
      assign row_data = {m_axi_rdata, held};
    end
  endgenerate

  always_ff @(posedge clk) begin
    if (rst) begin
      got <= '0;
      rb <= '0;
    end else if (take) begin
      got <= got == CW'(TB - 1) ? '0 : got + 1'b1;
      rb <= rb == RBW'(ROW_BEATS - 1) ? '0 : rb + 1'b1;
    end
  end
endmodule
`default_nettype wire
