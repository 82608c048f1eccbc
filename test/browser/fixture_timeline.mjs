// The deterministic timeline fixture shared by the component test and perf/timeline:
// one local day with 1,440 one-minute recording segments (every tenth one ends 20 s
// early, so there are gaps to draw) and 600 events spread uniformly over the day, plus
// optional events outside a given window. Runs in the browser and in node.
export const MIN = 60000;
export const DAY = 24 * 60 * MIN;
const LABELS = ['person', 'person', 'vehicle', 'motion', 'animal', 'person', 'vehicle', 'motion'];

function prng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

export function dayStart() {
	return new Date(2026, 10, 29).getTime();
}

export function segments(day = dayStart()) {
	const out = [];
	for (let i = 0; i < 1440; i++)
		out.push([day + i * MIN, day + (i + 1) * MIN - (i % 10 === 9 ? 20000 : 0)]);
	return out;
}

function event(rand, i, start, prefix) {
	const len = 2000 + Math.floor(rand() * 28000);
	const label = LABELS[Math.floor(rand() * LABELS.length)];
	return {
		id: `${prefix}-${i}`, revision: 1, camera: 'fixture', stream: 'main', start, end: start + len,
		labels: [{ name: label, score: 0.5 + rand() / 2 }], label, attributes: {}, hasJpeg: true, source: 'analysis',
	};
}

// 600 events uniformly over [day, day + DAY)
export function events(day = dayStart(), n = 600) {
	const rand = prng(600);
	const out = [];
	for (let i = 0; i < n; i++)
		out.push(event(rand, i, day + Math.floor(((i + rand()) / n) * (DAY - 30000)), 'ev'));
	return out;
}

// n events entirely inside [from, to) (used for events outside the rendered window)
export function eventsIn(from, to, n, seed = 1200) {
	const rand = prng(seed);
	const out = [];
	for (let i = 0; i < n; i++)
		out.push(event(rand, i, from + Math.floor(rand() * (to - from - 31000)), `out${seed}`));
	return out;
}
