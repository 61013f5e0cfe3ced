// Workspaces as the owner manages them. Explicit column lists: a new internal column never leaks.
import type { Queryable } from '../../infra/database.js';

export type WorkspaceStatus = 'active' | 'suspended';

export interface WorkspaceRow {
  id: string;
  name: string;
  status: WorkspaceStatus;
  timezone: string;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `id, name, status, timezone, api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`;

export const workspacesRepository = {
  async create(db: Queryable, input: { name: string; timezone: string }): Promise<WorkspaceRow> {
    const { rows } = await db.query<WorkspaceRow>(
      `INSERT INTO workspaces (name, timezone) VALUES ($1, $2) RETURNING ${COLUMNS}`,
      [input.name, input.timezone],
    );
    return rows[0]!;
  },

  async list(db: Queryable): Promise<WorkspaceRow[]> {
    return (
      await db.query<WorkspaceRow>(`SELECT ${COLUMNS} FROM workspaces ORDER BY workspaces.created_at, workspaces.id`)
    ).rows;
  },

  async find(db: Queryable, id: string): Promise<WorkspaceRow | null> {
    // Prepared once: every GET /v2/workspace runs it.
    const { rows } = await db.query<WorkspaceRow>(
      `SELECT ${COLUMNS} FROM workspaces WHERE id = $1`,
      [id],
      'workspace_find',
    );
    return rows[0] ?? null;
  },

  async setStatus(db: Queryable, id: string, status: WorkspaceStatus): Promise<WorkspaceRow | null> {
    const { rows } = await db.query<WorkspaceRow>(
      `UPDATE workspaces SET status = $2 WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, status],
    );
    return rows[0] ?? null;
  },

  async count(db: Queryable): Promise<number> {
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM workspaces');
    return rows[0]?.n ?? 0;
  },
};
