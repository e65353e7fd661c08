// The owner's approval of risky tool calls: a durable pause of the turn, answered from the chat, the console or the API.
export {
  type ApprovalAnswer,
  ApprovalCenter,
  type ApprovalCenterOptions,
  type ApprovalDecision,
  type ApprovalRecord,
  type ApprovalState,
  approvalQuestion,
  parseApprovalAnswer,
} from "./approval-center.js";
