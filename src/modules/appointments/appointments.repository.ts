// SQL for appointments. Every statement is scoped by workspace_id and names its columns.
import type { Queryable } from '../../infra/database.js';
import type { AppointmentStatus, AppointmentT } from './appointments.schemas.js';

export const APPOINTMENT_COLUMNS = `id, contact_id, api_time(starts_at) AS starts_at, api_time(ends_at) AS ends_at,
  timezone, status, source, api_time(created_at) AS created_at, api_time(updated_at) AS updated_at`;

export interface AppointmentListFilter {
  status?: AppointmentStatus | undefined;
  updatedAfter?: string | undefined;
  startsAfter?: string | undefined;
  startsBefore?: string | undefined;
  after?: readonly [string, string] | null;
  limit: number;
}

export const appointmentsRepository = {
  async list(db: Queryable, workspaceId: string, f: AppointmentListFilter): Promise<AppointmentT[]> {
    const params: unknown[] = [workspaceId];
    const where = ['workspace_id = $1'];
    let shape = 'appointments_list_';
    if (f.status !== undefined) {
      where.push(`status = $${params.push(f.status)}`);
      shape += 's';
    }
    if (f.updatedAfter !== undefined) {
      where.push(`updated_at > $${params.push(f.updatedAfter)}::timestamptz`);
      shape += 'u';
    }
    if (f.startsAfter !== undefined) {
      where.push(`starts_at >= $${params.push(f.startsAfter)}::timestamptz`);
      shape += 'a';
    }
    if (f.startsBefore !== undefined) {
      where.push(`starts_at <= $${params.push(f.startsBefore)}::timestamptz`);
      shape += 'b';
    }
    if (f.after) {
      where.push(`(updated_at, id) > ($${params.push(f.after[0])}::timestamptz, $${params.push(f.after[1])}::uuid)`);
      shape += 'k';
    }
    const { rows } = await db.query<AppointmentT>(
      `SELECT ${APPOINTMENT_COLUMNS} FROM appointments WHERE ${where.join(' AND ')}
        ORDER BY appointments.updated_at, appointments.id LIMIT $${params.push(f.limit)}`,
      params,
      shape,
    );
    return rows;
  },

  async find(db: Queryable, workspaceId: string, id: string): Promise<AppointmentT | null> {
    const { rows } = await db.query<AppointmentT>(
      `SELECT ${APPOINTMENT_COLUMNS} FROM appointments WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id],
      'appointments_find',
    );
    return rows[0] ?? null;
  },
};
