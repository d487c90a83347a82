import { nodeTooOld } from '../../src/node-version';

describe('the Node.js version check', () => {
  test.each(['22.12.0', '22.20.1', '23.0.0', '24.9.0', '30.1.2'])('%s runs', (v) => {
    expect(nodeTooOld(v, 'asset-service')).toBeUndefined();
  });

  test.each(['20.20.2', '22.11.0', '18.0.0', '21.7.3'])('%s is refused, saying why', (v) => {
    const message = nodeTooOld(v, 'assets');
    expect(message).toContain(`assets needs Node.js 22.12 or newer; this is Node.js ${v}`);
    expect(message).toContain('npm start');
  });
});
