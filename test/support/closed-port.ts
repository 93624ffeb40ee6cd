/**
 * A loopback port that nothing listens on, for tests of a server that is not there: 2, below the ports any service of
 * these machines uses, outside the ephemeral range, and not one that fetch refuses to reach (as it refuses 1 and 9).
 * A port taken with `listen(0)` and closed again was raced for: any other listener of the machine (a test fork's
 * server, a browser) could be given it before the test connected, which then met a server instead of a refusal (a
 * flake seen in `remote-faults.test.ts`: 502, not 503).
 */
export const CLOSED_PORT = 2;
