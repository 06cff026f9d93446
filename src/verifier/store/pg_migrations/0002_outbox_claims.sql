-- Webhook outbox claims (verifier/store/pg_store.h): a dispatcher claims the
-- rows it is about to send (SELECT ... FOR UPDATE SKIP LOCKED, then
-- claimed_until = now + lease) so the dispatchers of other replicas skip
-- them until the lease runs out or the attempt is recorded.
ALTER TABLE webhook_outbox ADD COLUMN claimed_until bigint;
CREATE INDEX webhook_outbox_claimable ON webhook_outbox(next_attempt_at, id)
  WHERE delivered_at IS NULL;
