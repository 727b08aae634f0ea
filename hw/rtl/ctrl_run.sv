`default_nettype none
// Run sequencer of a Vitis RTL kernel (ap_ctrl_hs): one run per ap_start.
// IDLE --ap_start--> GO (go pulses: every unit latches its arguments and starts) --> RUN
// (until no unit is busy: inputs read, outputs written and acknowledged) --> DONE (ap_done
// and ap_ready pulse together, the control slave clears ap_start) --> IDLE.
// A unit raises busy in the cycle after go at the latest, so RUN never sees a stale 0.
module ctrl_run #(
    parameter int N = 1
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          ap_start,
    input  wire  [N-1:0] busy,
    output logic         go,
    output logic         ap_done,
    output logic         ap_ready,
    output logic         ap_idle
);
  typedef enum logic [1:0] {IDLE, GO, RUN, DONE} state_t;
  state_t st;

  initial if (N < 1) $error("ctrl_run: N=%0d must be at least 1", N);

  always_ff @(posedge clk) begin
    if (rst) st <= IDLE;
    else begin
      case (st)
        IDLE: if (ap_start) st <= GO;
        GO: st <= RUN;
        RUN: if (busy == '0) st <= DONE;
        default: st <= IDLE;
      endcase
    end
  end

  assign go = st == GO;
  assign ap_done = st == DONE;
  assign ap_ready = st == DONE;
  assign ap_idle = st == IDLE;
endmodule
`default_nettype wire
