export type Webhook = { id: string; name: string; url: string; notify_email?: string; events: string[]; status: 'enabled' | 'disabled'; secret?: string; created_at: string; modified_at?: string };
export type Delivery = { id: string; event_id: string; event_type: string; attempt: number; status: 'succeeded' | 'failed'; response_status?: number; error?: string; duration_ms: number; created_at: string };
export type Draft = { name: string; url: string; notify_email: string | null; events: string[]; status: 'enabled' | 'disabled' };
