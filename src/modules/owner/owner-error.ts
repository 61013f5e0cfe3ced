// A refusal of an owner command, in words for the owner: the CLI prints it and exits 1, the owner
// channel answers it with 400. Anything else is an internal error whose details stay in the server.
export class OwnerError extends Error {}
