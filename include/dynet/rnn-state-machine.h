// The order in which an RNN builder's methods may be called:
// new_graph -> start_new_sequence -> add_input* (start_new_sequence and new_graph may come again).
#pragma once

namespace dynet {

enum RNNState { CREATED, GRAPH_READY, READING_INPUT };
enum RNNOp { new_graph, start_new_sequence, add_input };

class RNNStateMachine {
 public:
  // Throws std::runtime_error when `op` is not allowed in the current state.
  void transition(RNNOp op);
  RNNState state() const { return q_; }

 private:
  [[noreturn]] void failure(RNNOp op) const;
  RNNState q_ = CREATED;
};

}  // namespace dynet
