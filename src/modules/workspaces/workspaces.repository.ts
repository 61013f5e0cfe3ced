// Workspaces as the owner manages them. The select list is the workspace's schema: a new internal
// column never leaks.
import type { Static } from 'typebox';
import type { Queryable } from '../../infra/database.js';
import { selectList } from '../../infra/representation.js';
import { Workspace } from './workspaces.schemas.js';

export type WorkspaceRow = Static<typeof Workspace>;
export type WorkspaceStatus = WorkspaceRow['status'];

const COLUMNS = selectList(Workspace, 'workspaces');

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
