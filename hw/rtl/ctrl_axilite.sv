`default_nettype none
// s_axilite control slave of a Vitis RTL kernel (XRT-managed, ap_ctrl_hs).
//
// Register map (32-bit registers, byte addresses):
//   0x00 control: bit 0 ap_start (R/W; set by a host write of 1, cleared by the kernel's
//        ap_ready), bit 1 ap_done (R, clear on read), bit 2 ap_idle (R), bit 3 ap_ready (R,
//        clear on read), bit 7 auto_restart (R/W: ap_start is set again at every ap_done)
//   0x04 global interrupt enable (bit 0)
//   0x08 IP interrupt enable: bit 0 ap_done, bit 1 ap_ready
//   0x0C IP interrupt status: bit 0 ap_done, bit 1 ap_ready (set by the event when enabled,
//        a written 1 toggles the bit)
//   0x10 + 8*i: argument slot i, 64 bits (low word at +0, high word at +4), R/W; a 32-bit
//        scalar uses the low word of its slot.
// irq (the kernel's interrupt) = GIE and any ISR bit. Writes honour wstrb. Accesses outside the map read 0 and
// are ignored. One write and one read in flight (bresp/rresp always OKAY).
module ctrl_axilite #(
    parameter int NARGS  = 2,
    parameter int ADDR_W = 12
) (
    input  wire                   clk,
    input  wire                   rst,
    input  wire  [ADDR_W-1:0]     s_axi_control_awaddr,
    input  wire                   s_axi_control_awvalid,
    output logic                  s_axi_control_awready,
    input  wire  [31:0]           s_axi_control_wdata,
    input  wire  [3:0]            s_axi_control_wstrb,
    input  wire                   s_axi_control_wvalid,
    output logic                  s_axi_control_wready,
    output logic [1:0]            s_axi_control_bresp,
    output logic                  s_axi_control_bvalid,
    input  wire                   s_axi_control_bready,
    input  wire  [ADDR_W-1:0]     s_axi_control_araddr,
    input  wire                   s_axi_control_arvalid,
    output logic                  s_axi_control_arready,
    output logic [31:0]           s_axi_control_rdata,
    output logic [1:0]            s_axi_control_rresp,
    output logic                  s_axi_control_rvalid,
    input  wire                   s_axi_control_rready,
    output logic                  irq,        // the kernel's `interrupt`
    output logic                  ap_start,   // level: the host asked for a run
    input  wire                   ap_done,    // pulse: the run finished
    input  wire                   ap_ready,   // pulse: the run took its inputs (clears ap_start)
    input  wire                   ap_idle,    // level: no run in progress
    output logic [64*NARGS-1:0]   args
);
  localparam int SW = NARGS > 1 ? $clog2(NARGS) : 1;

  initial begin
    if (NARGS < 1) $error("ctrl_axilite: NARGS=%0d must be at least 1", NARGS);
    if (ADDR_W < 5 || 16 + 8 * NARGS > (1 << ADDR_W))
      $error("ctrl_axilite: ADDR_W=%0d cannot address %0d argument slots", ADDR_W, NARGS);
  end

  logic start_r, done_r, ready_r, auto_r, gie;
  logic [1:0] ier, isr;

  // ---- write channel: address and data may come in either order ----------------------
  logic [ADDR_W-1:0] waddr;
  logic [31:0] wdata;
  logic [3:0] wstrb;
  logic have_aw, have_w;
  wire do_write = have_aw && have_w && !s_axi_control_bvalid;
  wire [31:0] wmask = {{8{wstrb[3]}}, {8{wstrb[2]}}, {8{wstrb[1]}}, {8{wstrb[0]}}};

  assign s_axi_control_awready = !have_aw;
  assign s_axi_control_wready = !have_w;
  assign s_axi_control_bresp = 2'b00;
  assign s_axi_control_rresp = 2'b00;

  // argument slot of a byte address (valid when in range)
  function automatic logic in_args(input logic [ADDR_W-1:0] a);
    return a >= ADDR_W'(16) && a < ADDR_W'(16 + 8 * NARGS);
  endfunction
  function automatic logic [SW-1:0] slot(input logic [ADDR_W-1:0] a);
    /* verilator lint_off UNUSEDSIGNAL */
    logic [ADDR_W-1:0] s = (a - ADDR_W'(16)) >> 3;
    /* verilator lint_on UNUSEDSIGNAL */
    return s[SW-1:0];
  endfunction

  // ---- read channel --------------------------------------------------------------------
  wire do_read = s_axi_control_arvalid && s_axi_control_arready;
  assign s_axi_control_arready = !s_axi_control_rvalid;
  wire [ADDR_W-1:0] ra = s_axi_control_araddr;
  wire read_ctrl = do_read && ra[ADDR_W-1:2] == '0;

  always_ff @(posedge clk) begin
    if (rst) begin
      have_aw <= 1'b0;
      have_w <= 1'b0;
      s_axi_control_bvalid <= 1'b0;
      s_axi_control_rvalid <= 1'b0;
      s_axi_control_rdata <= '0;
      start_r <= 1'b0;
      done_r <= 1'b0;
      ready_r <= 1'b0;
      auto_r <= 1'b0;
      gie <= 1'b0;
      ier <= '0;
      isr <= '0;
      args <= '0;
      waddr <= '0;
      wdata <= '0;
      wstrb <= '0;
    end else begin
      if (s_axi_control_awvalid && s_axi_control_awready) begin
        have_aw <= 1'b1;
        waddr <= s_axi_control_awaddr;
      end
      if (s_axi_control_wvalid && s_axi_control_wready) begin
        have_w <= 1'b1;
        wdata <= s_axi_control_wdata;
        wstrb <= s_axi_control_wstrb;
      end
      if (s_axi_control_bvalid && s_axi_control_bready) s_axi_control_bvalid <= 1'b0;
      // status events first; a register write or read in the same cycle takes precedence
      if (ap_ready) start_r <= auto_r;
      if (ap_done) begin
        done_r <= 1'b1;
        if (auto_r) start_r <= 1'b1;
        if (ier[0]) isr[0] <= 1'b1;
      end
      if (ap_ready) begin
        ready_r <= 1'b1;
        if (ier[1]) isr[1] <= 1'b1;
      end
      if (do_write) begin
        have_aw <= 1'b0;
        have_w <= 1'b0;
        s_axi_control_bvalid <= 1'b1;
        if (waddr[ADDR_W-1:2] == '0) begin
          if (wstrb[0] && wdata[0]) start_r <= 1'b1;
          if (wstrb[0]) auto_r <= wdata[7];
        end else if (waddr == ADDR_W'(4)) begin
          if (wstrb[0]) gie <= wdata[0];
        end else if (waddr == ADDR_W'(8)) begin
          if (wstrb[0]) ier <= wdata[1:0];
        end else if (waddr == ADDR_W'(12)) begin
          if (wstrb[0]) isr <= isr ^ wdata[1:0];
        end else if (in_args(waddr)) begin
          if (waddr[2])
            args[64*slot(waddr)+32 +: 32] <= (args[64*slot(waddr)+32 +: 32] & ~wmask) | (wdata & wmask);
          else
            args[64*slot(waddr) +: 32] <= (args[64*slot(waddr) +: 32] & ~wmask) | (wdata & wmask);
        end
      end
      if (s_axi_control_rvalid && s_axi_control_rready) s_axi_control_rvalid <= 1'b0;
      if (do_read) begin
        s_axi_control_rvalid <= 1'b1;
        if (read_ctrl) begin
          s_axi_control_rdata <= {24'd0, auto_r, 3'd0, ready_r, ap_idle, done_r, start_r};
          // clear on read, unless the event repeats in this very cycle
          if (!ap_done) done_r <= 1'b0;
          if (!ap_ready) ready_r <= 1'b0;
        end else if (ra == ADDR_W'(4)) s_axi_control_rdata <= {31'd0, gie};
        else if (ra == ADDR_W'(8)) s_axi_control_rdata <= {30'd0, ier};
        else if (ra == ADDR_W'(12)) s_axi_control_rdata <= {30'd0, isr};
        else if (in_args(ra)) s_axi_control_rdata <= ra[2] ? args[64*slot(ra)+32 +: 32] : args[64*slot(ra) +: 32];
        else s_axi_control_rdata <= '0;
      end
    end
  end

  assign ap_start = start_r;
  assign irq = gie && (isr != 2'b00);
endmodule
`default_nettype wire
