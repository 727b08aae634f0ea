`default_nettype none
// AXI4 address channel for a span of beats given at run time (the layer engine's feature
// reads, weight tiles and result writes; axi_read.sv is the compile-time form for one
// conv's tiles). `go` (taken while `ready`) latches a span of `beats` full-width beats from
// `addr` (beat-aligned); from the next cycle the span goes out as INCR bursts of at most 256
// beats that never cross a 4 KB boundary, one burst a cycle (ax_valid held until ax_ready).
// `ready` is also high in the cycle of the span's last handshake, so spans follow one another
// without a gap. Only the address channel: the caller moves the data beats.
module axi_bursts #(
    parameter int DATA_W = 128,
    parameter int ADDR_W = 32,
    parameter int BEATS_W = 24   // width of a span's beat count
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 go,
    input  wire  [ADDR_W-1:0]   addr,
    input  wire  [BEATS_W-1:0]  beats,
    output logic                ready,
    output logic [ADDR_W-1:0]   ax_addr,
    output logic [7:0]          ax_len,
    output logic [2:0]          ax_size,
    output logic [1:0]          ax_burst,
    output logic                ax_valid,
    input  wire                 ax_ready
);
  localparam int DB = DATA_W / 8;
  localparam int DBW = $clog2(DB);

  initial begin
    if (DATA_W < 8 || (DATA_W & (DATA_W - 1)) != 0 || DATA_W > 1024)
      $error("axi_bursts: DATA_W=%0d must be a power of two in 8..1024", DATA_W);
    if (ADDR_W < 13 || BEATS_W < 9) $error("axi_bursts: ADDR_W=%0d below 13 or BEATS_W=%0d below 9", ADDR_W, BEATS_W);
  end

  logic [ADDR_W-1:0] cur;    // next burst's address
  logic [BEATS_W-1:0] left;  // beats of the span not yet requested
  logic [BEATS_W-1:0] len;   // this burst's beats
  logic [12:0] to4k;         // beats to the next 4 KB boundary
  logic hs;

  always_comb begin
    to4k = 13'((13'd4096 - {1'b0, cur[11:0]}) >> DBW);
    len = left;
    if (32'(len) > 256) len = BEATS_W'(256);
    if (32'(to4k) < 32'(len)) len = BEATS_W'(to4k);
  end
  assign hs = ax_valid && ax_ready;
  assign ax_valid = left != '0;
  assign ax_addr = cur;
  assign ax_len = 8'(len - 1'b1);
  assign ax_size = 3'(DBW);
  assign ax_burst = 2'b01;  // INCR
  assign ready = left == '0 || (hs && left == len);

  always_ff @(posedge clk) begin
    if (rst) begin
      cur <= '0;
      left <= '0;
    end else if (go && ready) begin
      cur <= addr;
      left <= beats;
    end else if (hs) begin
      cur <= cur + ADDR_W'(32'(len) << DBW);
      left <= left - len;
    end
  end
endmodule
`default_nettype wire
