-- The relay counts an account's pending deliveries before it adds more (the per-account bound):
-- without this it would read every delivery the account's webhooks ever had, sent ones included.
CREATE INDEX webhook_deliveries_pending_by_webhook ON webhook_deliveries (webhook_id) WHERE status = 'pending';
