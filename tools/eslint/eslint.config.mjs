// ESLint's configuration for the html report's script (src/analysis/report/html/page.js), run by
// tests/html/lint_js.py (meson test html-eslint) with the ESLint that scripts/eslint-setup installs
// into tools/eslint/node_modules; tests/html/probe.js is held to the same rules.
//
// Beyond eslint:recommended: the page runs as a plain classic script in any browser opened on a
// file, so every global it reads is listed here (a typo in one is an error, not a silent
// undefined); and nothing may turn a string into markup or code, since names, files and marker
// labels in the data come from the traced program (docs/report-formats.md).
import js from '@eslint/js';

const browserGlobals = {
	window: 'readonly',
	document: 'readonly',
	location: 'readonly',
	navigator: 'readonly',
	getComputedStyle: 'readonly',
	requestAnimationFrame: 'readonly',
	setTimeout: 'readonly',
	clearTimeout: 'readonly',
	Intl: 'readonly',
	// tests/html/probe.js fires the page's handlers as a reader would
	Event: 'readonly',
	MouseEvent: 'readonly',
	WheelEvent: 'readonly',
};

const markupSinks = ['innerHTML', 'outerHTML'].map((property) => ({
	property,
	message: 'build elements and set textContent: trace strings must never become markup',
}));

export default [
	js.configs.recommended,
	{
		files: ['**/*.js'],
		languageOptions: {
			ecmaVersion: 5,
			sourceType: 'script',
			globals: browserGlobals,
		},
		rules: {
			strict: ['error', 'global'],
			'no-implicit-globals': 'error',
			'no-undef': 'error',
			'no-unused-vars': ['error', {args: 'none'}],
			'no-shadow': 'error',
			'no-redeclare': 'error',
			eqeqeq: ['error', 'smart'],
			'no-eval': 'error',
			'no-implied-eval': 'error',
			'no-new-func': 'error',
			'no-script-url': 'error',
			'no-restricted-properties': ['error', ...markupSinks,
				{object: 'document', property: 'write', message: 'no document.write'},
				{object: 'document', property: 'writeln', message: 'no document.writeln'}],
			'no-restricted-syntax': ['error', {
				selector: "CallExpression[callee.property.name='insertAdjacentHTML']",
				message: 'no insertAdjacentHTML: trace strings must never become markup',
			}, {
				selector: "CallExpression[callee.property.name='createContextualFragment']",
				message: 'no createContextualFragment: trace strings must never become markup',
			}],
		},
	},
];
