// The workbench's routes. State lives in the URL (path and query), so every view has a deep
// link and back/forward work. Pages are loaded on demand: the chart library only on chart pages.
import { lazy, Suspense } from "react";
import { Route, Router, Switch } from "wouter";
import { Loading } from "./components/ErrorNote";
import { Layout } from "./components/Layout";

const Home = lazy(() => import("./pages/Home"));
const Play = lazy(() => import("./pages/Play"));
const Episodes = lazy(() => import("./pages/Episodes"));
const EpisodeView = lazy(() => import("./pages/EpisodeView"));
const Evaluations = lazy(() => import("./pages/Evaluations"));
const EvaluationView = lazy(() => import("./pages/EvaluationView"));
const Training = lazy(() => import("./pages/Training"));
const TrainingView = lazy(() => import("./pages/TrainingView"));

function NotFound() {
  return (
    <section>
      <h1>Not found</h1>
      <p>No page here.</p>
    </section>
  );
}

export function App() {
  return (
    <Router base="/ui">
      <Layout>
        <Suspense fallback={<Loading what="the page" />}>
          <Switch>
            <Route path="/" component={Home} />
            <Route path="/play" component={Play} />
            <Route path="/episodes" component={Episodes} />
            <Route path="/episodes/:id">{(p) => <EpisodeView id={p.id} />}</Route>
            <Route path="/evaluations" component={Evaluations} />
            <Route path="/evaluations/:name">{(p) => <EvaluationView name={decodeURIComponent(p.name)} />}</Route>
            <Route path="/training" component={Training} />
            <Route path="/training/:name">{(p) => <TrainingView name={decodeURIComponent(p.name)} />}</Route>
            <Route component={NotFound} />
          </Switch>
        </Suspense>
      </Layout>
    </Router>
  );
}
