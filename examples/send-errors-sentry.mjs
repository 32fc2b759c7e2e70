// Send errors to Sightline with the unmodified Sentry SDK for Node.
//
//   SIGHTLINE_DSN=http://<ingest key>@localhost:8080/ingest/<project id> node examples/send-errors-sentry.mjs
//
// `npm start` prints this DSN ("Sentry DSN") on first start. The ingest key (scope events:ingest)
// can send telemetry but not read it; read the errors back with the admin key:
//   SIGHTLINE_API_KEY=<admin key> sightline errors list --environment example
import * as Sentry from '@sentry/node';

const dsn = process.env.SIGHTLINE_DSN;
if (!dsn) {
  console.error('Set SIGHTLINE_DSN, e.g. http://<ingest key>@localhost:8080/ingest/<project id>');
  process.exit(2);
}

Sentry.init({
  dsn,
  release: 'example-shop@1.4.2',
  environment: 'example',
  serverName: 'example-host',
  initialScope: { tags: { 'service.name': 'example-shop' } },
  sendClientReports: false,
});

class PaymentDeclinedError extends Error {
  constructor(message) {
    super(message);
    this.name = 'PaymentDeclinedError';
  }
}

function chargeCard(orderId, amountMinor) {
  throw new PaymentDeclinedError(`card declined for order ${orderId} (${amountMinor} minor units)`);
}

// Two failing orders: Sightline groups them into one error group (numbers in messages are masked).
for (const [orderId, amount] of [[1001, 4200], [1002, 990]]) {
  try {
    chargeCard(orderId, amount);
  } catch (err) {
    Sentry.withScope((scope) => {
      scope.setUser({ id: `user-${orderId}` });
      scope.setTag('order_id', String(orderId));
      const eventId = Sentry.captureException(err);
      console.log(`captured ${err.name} for order ${orderId}: event ${eventId}`);
    });
  }
}
Sentry.captureMessage('Example: inventory sync is lagging behind', 'warning');

// Events are sent in the background; wait for them before the process ends.
const flushed = await Sentry.close(10_000);
if (!flushed) {
  console.error('Timed out sending events: is Sightline running at the DSN host?');
  process.exit(1);
}
console.log('sent');
