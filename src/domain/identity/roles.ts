/** Organization membership roles. */
export type Role = 'owner' | 'admin' | 'member';
