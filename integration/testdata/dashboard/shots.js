// Screenshots of rocketmq-dashboard's cluster and topic pages in headless Debian Chromium, driven by
// playwright-core (TestDashboard runs it). Usage:
//   node shots.js PLAYWRIGHT_CORE_DIR CHROMIUM BASE_URL OUT_DIR BROKER_NAME TOPIC_FILTER TOPIC
// Each page must show what it is about (the broker's name, the topic) before it is captured; a page
// that does not within its bound fails the run with the reason.
const [pwDir, chromium, base, outDir, brokerName, topicFilter, topic] = process.argv.slice(2);
const { chromium: browserType } = require(pwDir);
const fs = require('fs');
const os = require('os');
const path = require('path');

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'rmqd-chromium-'));
  // A fresh profile (--user-data-dir, which playwright takes as launchPersistentContext's first argument).
  const browser = await browserType.launchPersistentContext(profile, {
    executablePath: chromium,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`HTTP ${r.status()} ${r.url()}`);
    });

    await page.goto(`${base}/#/cluster`, { waitUntil: 'networkidle', timeout: 120000 });
    await page.getByText(brokerName, { exact: true }).first().waitFor({ timeout: 60000 });
    await page.waitForTimeout(1000); // let the page's entry animation finish
    await page.screenshot({ path: path.join(outDir, 'dashboard-cluster.png'), fullPage: true });

    await page.goto(`${base}/#/topic`, { waitUntil: 'networkidle', timeout: 120000 });
    await page.locator('.ant-form-item input').first().fill(topicFilter);
    // A topic the producer created has no message.type attribute: the page files it under UNSPECIFIED,
    // which its type filters hide by default (on Apache as on rmqd); show every type.
    const boxes = page.locator('.ant-form-item .ant-checkbox-input');
    for (let i = 0; i < await boxes.count(); i++) {
      if (!(await boxes.nth(i).isChecked())) await boxes.nth(i).check();
    }
    try {
      await page.getByText(topic, { exact: true }).first().waitFor({ timeout: 60000 });
    } catch (e) {
      await page.screenshot({ path: path.join(outDir, 'dashboard-topic-failed.png'), fullPage: true });
      throw e;
    }
    await page.waitForTimeout(1000);
    await page.screenshot({ path: path.join(outDir, 'dashboard-topic.png'), fullPage: true });
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(JSON.stringify({ ok: true, errors }));
})().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
